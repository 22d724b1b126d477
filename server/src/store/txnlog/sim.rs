//! A simulated disk for crash tests. It keeps two images of every file: what the process
//! sees, and what is durable (as of the file's last fsync), and two of the directory:
//! the names the process sees and those made durable by the last directory fsync.
//! [`SimDisk::crash`] returns the disk a reboot would find: the durable images, plus a
//! random subset of the sectors written since (a torn write), a random choice of the
//! file's old or new length, and a random prefix of the directory changes since.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::disk::{Disk, DiskFile};
use super::segment::SECTOR;

#[derive(Clone, Default)]
pub struct SimDisk {
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    inodes: Vec<Inode>,
    names: BTreeMap<PathBuf, usize>,
    durable_names: BTreeMap<PathBuf, usize>,
    /// Directory changes since the last directory fsync, in order.
    pending: Vec<NameOp>,
    dirs: BTreeSet<PathBuf>,
    fsyncs: u64,
    /// How long an fsync takes, so that crashes can land while writes wait for one.
    fsync_delay: std::time::Duration,
}

#[derive(Default, Clone)]
struct Inode {
    live: Vec<u8>,
    durable: Vec<u8>,
}

enum NameOp {
    Link(PathBuf, usize),
    Unlink(PathBuf),
    Rename(PathBuf, PathBuf),
}

impl NameOp {
    fn apply(&self, names: &mut BTreeMap<PathBuf, usize>) {
        match self {
            NameOp::Link(path, inode) => {
                names.insert(path.clone(), *inode);
            }
            NameOp::Unlink(path) => {
                names.remove(path);
            }
            NameOp::Rename(from, to) => {
                if let Some(inode) = names.remove(from) {
                    names.insert(to.clone(), inode);
                }
            }
        }
    }
}

/// xorshift64*: deterministic per seed, no dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    pub fn coin(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }
}

impl SimDisk {
    /// The disk as a reboot right now would find it.
    pub fn crash(&self, seed: u64) -> SimDisk {
        let state = self.state.lock();
        let mut rng = Rng::new(seed);
        let mut names = state.durable_names.clone();
        let applied = rng.below(state.pending.len() as u64 + 1) as usize;
        for op in &state.pending[..applied] {
            op.apply(&mut names);
        }
        let mut inodes = Vec::new();
        let mut renumbered = BTreeMap::new();
        for (path, inode) in &names {
            let image = crash_image(&state.inodes[*inode], &mut rng);
            renumbered.insert(path.clone(), inodes.len());
            inodes.push(Inode {
                live: image.clone(),
                durable: image,
            });
        }
        SimDisk {
            state: Arc::new(Mutex::new(State {
                inodes,
                names: renumbered.clone(),
                durable_names: renumbered,
                pending: Vec::new(),
                dirs: state.dirs.clone(),
                fsyncs: 0,
                fsync_delay: state.fsync_delay,
            })),
        }
    }

    /// A disk whose fsyncs take `delay`.
    pub fn with_fsync_delay(delay: std::time::Duration) -> SimDisk {
        let disk = SimDisk::default();
        disk.state.lock().fsync_delay = delay;
        disk
    }

    /// File fsyncs so far.
    pub fn fsyncs(&self) -> u64 {
        self.state.lock().fsyncs
    }

    /// The file's bytes as the process sees them.
    pub fn contents(&self, path: &Path) -> Option<Vec<u8>> {
        let state = self.state.lock();
        state.names.get(path).map(|&i| state.inodes[i].live.clone())
    }

    /// Overwrites a file's bytes, live and durable: disk corruption.
    pub fn corrupt(&self, path: &Path, bytes: Vec<u8>) {
        let mut state = self.state.lock();
        if let Some(&i) = state.names.get(path) {
            state.inodes[i] = Inode {
                live: bytes.clone(),
                durable: bytes,
            };
        }
    }
}

/// Each sector written since the last fsync lands or not, by a coin toss; the length is
/// the old or the new one.
fn crash_image(inode: &Inode, rng: &mut Rng) -> Vec<u8> {
    let len = if rng.coin() {
        inode.live.len()
    } else {
        inode.durable.len()
    };
    let mut image = vec![0u8; len];
    for start in (0..len).step_by(SECTOR) {
        let end = (start + SECTOR).min(len);
        let source = if rng.coin() {
            &inode.live
        } else {
            &inode.durable
        };
        for (i, byte) in image[start..end].iter_mut().enumerate() {
            *byte = source.get(start + i).copied().unwrap_or(0);
        }
    }
    image
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, path.display().to_string())
}

impl Disk for SimDisk {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.state.lock().dirs.insert(dir.to_owned());
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<(String, u64)>> {
        let state = self.state.lock();
        if !state.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        Ok(state
            .names
            .iter()
            .filter(|(path, _)| path.parent() == Some(dir))
            .filter_map(|(path, &inode)| {
                let name = path.file_name()?.to_str()?.to_owned();
                Some((name, state.inodes[inode].live.len() as u64))
            })
            .collect())
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn DiskFile>> {
        let mut state = self.state.lock();
        let inode = state.inodes.len();
        state.inodes.push(Inode::default());
        state.names.insert(path.to_owned(), inode);
        state.pending.push(NameOp::Link(path.to_owned(), inode));
        Ok(Box::new(SimFile {
            state: self.state.clone(),
            inode,
        }))
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn DiskFile>> {
        let state = self.state.lock();
        let inode = *state.names.get(path).ok_or_else(|| not_found(path))?;
        Ok(Box::new(SimFile {
            state: self.state.clone(),
            inode,
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        let inode = state.names.remove(from).ok_or_else(|| not_found(from))?;
        state.names.insert(to.to_owned(), inode);
        state
            .pending
            .push(NameOp::Rename(from.to_owned(), to.to_owned()));
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        state.names.remove(path).ok_or_else(|| not_found(path))?;
        state.pending.push(NameOp::Unlink(path.to_owned()));
        Ok(())
    }

    fn sync_dir(&self, _dir: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        let pending = std::mem::take(&mut state.pending);
        for op in &pending {
            op.apply(&mut state.durable_names);
        }
        Ok(())
    }
}

struct SimFile {
    state: Arc<Mutex<State>>,
    inode: usize,
}

impl DiskFile for SimFile {
    fn read_all(&mut self) -> io::Result<Vec<u8>> {
        Ok(self.state.lock().inodes[self.inode].live.clone())
    }

    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let state = self.state.lock();
        let live = &state.inodes[self.inode].live;
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let bytes = start
            .checked_add(buf.len())
            .and_then(|end| live.get(start..end))
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        buf.copy_from_slice(bytes);
        Ok(())
    }

    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        let mut state = self.state.lock();
        let live = &mut state.inodes[self.inode].live;
        let start = offset as usize;
        if live.len() < start + bytes.len() {
            live.resize(start + bytes.len(), 0);
        }
        live[start..start + bytes.len()].copy_from_slice(bytes);
        Ok(())
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.state.lock().inodes[self.inode]
            .live
            .resize(len as usize, 0);
        Ok(())
    }

    fn allocate(&mut self, len: u64) -> io::Result<()> {
        let live = &mut self.state.lock().inodes[self.inode].live;
        if live.len() < len as usize {
            live.resize(len as usize, 0);
        }
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        let delay = self.state.lock().fsync_delay;
        std::thread::sleep(delay);
        let mut state = self.state.lock();
        state.fsyncs += 1;
        let inode = &mut state.inodes[self.inode];
        inode.durable = inode.live.clone();
        Ok(())
    }
}
