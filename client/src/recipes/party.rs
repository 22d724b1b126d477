//! Group membership in kazoo's `Party` and `ShallowParty` layouts: each member is an
//! ephemeral child of the party's path, gone when it leaves or its session ends.
//! `Party` names the node `<32 hex digits>__party__` and keeps the identifier in its
//! data; `ShallowParty` puts the identifier in the name (`<32 hex digits>-<identifier>`)
//! so that one listing gives every member.

use crate::recipes::{delete_if_exists, join, random_hex};
use crate::{Client, CreateMode, Error, ErrorCode};

const PARTY_NODE: &str = "__party__";

/// Which layout a party uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    Deep,
    Shallow,
}

/// A party whose members' identifiers are in their nodes' data (kazoo `Party`).
///
/// ```no_run
/// # async fn demo(client: paddock_client::Client) -> Result<(), paddock_client::Error> {
/// use paddock_client::recipes::Party;
/// let party = Party::new(&client, "/workers", "worker-7");
/// party.join().await?;
/// println!("members: {:?}", party.members().await?);
/// party.leave().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Party {
    client: Client,
    path: String,
    identifier: String,
    /// This member's node name.
    node: String,
    layout: Layout,
}

/// A party whose members' identifiers are in their node names (kazoo `ShallowParty`):
/// listing the members is one call. The identifier must be valid in a node name.
#[derive(Debug, Clone)]
pub struct ShallowParty {
    party: Party,
}

impl Party {
    /// This process as a prospective member `identifier` of the party at `path`.
    pub fn new(client: &Client, path: &str, identifier: &str) -> Self {
        Party {
            client: client.clone(),
            path: path.to_owned(),
            identifier: identifier.to_owned(),
            node: format!("{}{PARTY_NODE}", random_hex()),
            layout: Layout::Deep,
        }
    }

    /// Joins (creates this member's ephemeral node); joining twice is fine.
    pub async fn join(&self) -> Result<(), Error> {
        self.client.ensure_path(&self.path).await?;
        let data = match self.layout {
            Layout::Deep => self.identifier.as_bytes(),
            Layout::Shallow => b"",
        };
        let node = join(&self.path, &self.node);
        match self.client.create(&node, data, CreateMode::Ephemeral).await {
            // NodeExists: an earlier join whose answer was lost.
            Ok(_) | Err(Error::Keeper(ErrorCode::NodeExists)) => Ok(()),
            Err(err) => Err(err),
        }
    }

    /// Leaves (deletes this member's node); leaving twice is fine.
    pub async fn leave(&self) -> Result<(), Error> {
        delete_if_exists(&self.client, &join(&self.path, &self.node)).await
    }

    /// The members' identifiers, in no particular order.
    pub async fn members(&self) -> Result<Vec<String>, Error> {
        let children = self.children().await?;
        if self.layout == Layout::Shallow {
            return Ok(children
                .iter()
                .map(|child| match child.find('-') {
                    Some(dash) => child[dash + 1..].to_owned(),
                    None => child.clone(),
                })
                .collect());
        }
        let mut members = Vec::new();
        for child in children {
            match self.client.get_data(&join(&self.path, &child)).await {
                Ok((data, _)) => members.push(String::from_utf8_lossy(&data).into_owned()),
                // Left meanwhile.
                Err(Error::Keeper(ErrorCode::NoNode)) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(members)
    }

    /// How many members there are.
    pub async fn len(&self) -> Result<usize, Error> {
        Ok(self.children().await?.len())
    }

    /// Whether the party has no member.
    pub async fn is_empty(&self) -> Result<bool, Error> {
        Ok(self.len().await? == 0)
    }

    /// The member nodes (kazoo counts only nodes of its own layout in a `Party`).
    async fn children(&self) -> Result<Vec<String>, Error> {
        self.client.ensure_path(&self.path).await?;
        let children = self.client.get_children(&self.path).await?;
        Ok(match self.layout {
            Layout::Deep => children
                .into_iter()
                .filter(|c| c.contains(PARTY_NODE))
                .collect(),
            Layout::Shallow => children,
        })
    }
}

impl ShallowParty {
    /// This process as a prospective member `identifier` of the party at `path`.
    pub fn new(client: &Client, path: &str, identifier: &str) -> Self {
        ShallowParty {
            party: Party {
                client: client.clone(),
                path: path.to_owned(),
                identifier: identifier.to_owned(),
                node: format!("{}-{identifier}", random_hex()),
                layout: Layout::Shallow,
            },
        }
    }

    /// See [`Party::join`].
    pub async fn join(&self) -> Result<(), Error> {
        self.party.join().await
    }

    /// See [`Party::leave`].
    pub async fn leave(&self) -> Result<(), Error> {
        self.party.leave().await
    }

    /// The members' identifiers, from one listing.
    pub async fn members(&self) -> Result<Vec<String>, Error> {
        self.party.members().await
    }

    /// How many members there are.
    pub async fn len(&self) -> Result<usize, Error> {
        self.party.len().await
    }

    /// Whether the party has no member.
    pub async fn is_empty(&self) -> Result<bool, Error> {
        self.party.is_empty().await
    }
}
