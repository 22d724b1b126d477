//! The data directories before anything is read from them: `dataDir` and `dataLogDir`
//! are created if missing and checked to be usable directories, and `dataDir` is locked
//! to this process, so that a second server started on it by mistake is refused with a
//! message that says so instead of corrupting the first one's files.
//!
//! # The lock file
//! `dataDir/paddock.lock` holds the decimal pid of the process that owns the directory
//! and an exclusive `flock` on it for as long as the process runs. The kernel drops the
//! lock when the process exits however it exits, so a stale file after a crash is
//! simply taken over. (sled takes a lock on its own database too, but its error names
//! neither the directory nor the other process.)

use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind, Read, Seek, Write};
use std::path::{Path, PathBuf};

use fs2::FileExt;

/// The lock file's name inside `dataDir`.
pub const LOCK_FILE: &str = "paddock.lock";

#[derive(Debug, thiserror::Error)]
pub enum DirError {
    #[error(
        "another paddock process (pid {pid}) is using dataDir {}: stop it first, or give \
         this server a dataDir of its own",
        path.display()
    )]
    InUse { path: PathBuf, pid: String },
    #[error(
        "{key} {} is a file, not a directory: set {key} to a directory (Paddock creates \
         it if missing)",
        path.display()
    )]
    NotADirectory { key: &'static str, path: PathBuf },
    #[error(
        "{key} {} is not readable and writable by this user ({source}): fix its owner or \
         mode (chown/chmod), or set {key} to a directory this user owns",
        path.display()
    )]
    NoAccess {
        key: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "cannot create {key} {} ({source}): create it, or set {key} to a path this user \
         can create",
        path.display()
    )]
    Create {
        key: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{key} {}: {source}", path.display())]
    Io {
        key: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// Holds `dataDir` for this process until dropped (or the process ends).
#[derive(Debug)]
pub struct DataDirLock {
    _file: File,
}

/// Creates `path` if missing and checks that it is a directory this process can list.
/// `key` is the zoo.cfg key that named it, for the message.
pub fn prepare(key: &'static str, path: &Path) -> Result<(), DirError> {
    match fs::metadata(path) {
        Ok(meta) if !meta.is_dir() => {
            return Err(DirError::NotADirectory {
                key,
                path: path.to_owned(),
            })
        }
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {
            fs::create_dir_all(path).map_err(|source| classify(key, path, source, true))?;
        }
        Err(source) => return Err(classify(key, path, source, false)),
    }
    fs::read_dir(path).map_err(|source| classify(key, path, source, false))?;
    Ok(())
}

/// Takes `dataDir`'s lock, or says which process holds it.
pub fn lock(data_dir: &Path) -> Result<DataDirLock, DirError> {
    let key = "dataDir";
    let path = data_dir.join(LOCK_FILE);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|source| classify(key, data_dir, source, false))?;
    if let Err(e) = file.try_lock_exclusive() {
        if e.kind() == ErrorKind::WouldBlock
            || e.raw_os_error() == fs2::lock_contended_error().raw_os_error()
        {
            let mut pid = String::new();
            // The holder wrote its pid when it took the lock; a read failure only costs
            // the number in the message.
            let _ = file.read_to_string(&mut pid);
            let pid = pid.trim();
            return Err(DirError::InUse {
                path: data_dir.to_owned(),
                pid: if pid.is_empty() { "unknown" } else { pid }.to_owned(),
            });
        }
        return Err(DirError::Io {
            key,
            path,
            source: e,
        });
    }
    let record = |file: &mut File| -> io::Result<()> {
        file.set_len(0)?;
        file.rewind()?;
        writeln!(file, "{}", std::process::id())?;
        file.sync_all()
    };
    record(&mut file).map_err(|source| DirError::Io {
        key,
        path: path.clone(),
        source,
    })?;
    Ok(DataDirLock { _file: file })
}

/// Names the fix for the common causes.
fn classify(key: &'static str, path: &Path, source: io::Error, creating: bool) -> DirError {
    let path = path.to_owned();
    match source.kind() {
        ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem => {
            DirError::NoAccess { key, path, source }
        }
        ErrorKind::NotADirectory if !creating => DirError::NotADirectory { key, path },
        _ if creating => DirError::Create { key, path, source },
        _ => DirError::Io { key, path, source },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_directory_is_created() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b");
        prepare("dataDir", &dir).unwrap();
        assert!(dir.is_dir());
    }

    #[test]
    fn a_file_in_place_of_the_directory_is_named_with_the_fix() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("data");
        fs::write(&file, "").unwrap();
        let message = prepare("dataDir", &file).unwrap_err().to_string();
        assert!(
            message.contains(&format!("dataDir {} is a file", file.display())),
            "{message}"
        );
        assert!(message.contains("set dataDir to a directory"), "{message}");
        let under = prepare("dataLogDir", &file.join("log")).unwrap_err();
        assert!(under.to_string().contains("dataLogDir"), "{under}");
    }

    #[test]
    fn an_unreadable_directory_names_the_path_and_the_fix() {
        // Tests run as root, which permissions don't stop: the message is checked on the
        // error the kernel gives other users.
        let denied = io::Error::from(ErrorKind::PermissionDenied);
        let message = classify("dataDir", Path::new("/srv/zk"), denied, false).to_string();
        assert!(
            message.starts_with("dataDir /srv/zk is not readable"),
            "{message}"
        );
        assert!(message.contains("chown/chmod"), "{message}");
    }

    #[test]
    fn a_second_lock_names_the_holder() {
        let root = tempfile::tempdir().unwrap();
        let held = lock(root.path()).unwrap();
        let message = lock(root.path()).unwrap_err().to_string();
        assert!(
            message.starts_with(&format!(
                "another paddock process (pid {}) is using dataDir {}",
                std::process::id(),
                root.path().display()
            )),
            "{message}"
        );
        drop(held);
        lock(root.path()).unwrap();
    }
}
