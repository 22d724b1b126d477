//! The file operations the txn log uses, behind a trait so that tests can run the log on
//! a simulated disk that loses every write not covered by an fsync when it "crashes"
//! (see `sim`). Production uses [`OsDisk`], plain `std::fs`.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// A directory tree the log lives in.
pub trait Disk: Send + Sync + 'static {
    /// Creates `dir` and its parents if they are missing.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// The names and lengths of the regular files in `dir`.
    fn list(&self, dir: &Path) -> io::Result<Vec<(String, u64)>>;
    /// Creates `path` empty, replacing a file already there, for reading and writing.
    fn create(&self, path: &Path) -> io::Result<Box<dyn DiskFile>>;
    /// Opens the existing file `path` for reading and writing.
    fn open(&self, path: &Path) -> io::Result<Box<dyn DiskFile>>;
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Makes the creations, renames and removals in `dir` durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// An open file. Positions are explicit, so a handle has no cursor to get wrong.
pub trait DiskFile: Send {
    /// The whole file.
    fn read_all(&mut self) -> io::Result<Vec<u8>>;
    /// Exactly `buf.len()` bytes from `offset`; an error if the file ends before.
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()>;
    /// Shrinks or extends the file; an extension reads as zeros.
    fn set_len(&mut self, len: u64) -> io::Result<()>;
    /// Extends the file to `len` (reading as zeros) with its blocks reserved on the
    /// disk, so that a full disk fails here rather than in a later write.
    fn allocate(&mut self, len: u64) -> io::Result<()>;
    /// Makes the data written so far, and the file's length, durable (`fdatasync`).
    fn sync_data(&mut self) -> io::Result<()>;
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct OsDisk;

impl Disk for OsDisk {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<(String, u64)>> {
        let mut files = Vec::new();
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            let meta = entry.metadata()?;
            if !meta.is_file() {
                continue;
            }
            // A name that is not UTF-8 is not one of ours.
            if let Ok(name) = entry.file_name().into_string() {
                files.push((name, meta.len()));
            }
        }
        Ok(files)
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn DiskFile>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(Box::new(OsFile(file)))
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn DiskFile>> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        Ok(Box::new(OsFile(file)))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
}

struct OsFile(File);

impl DiskFile for OsFile {
    fn read_all(&mut self) -> io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.0.seek(SeekFrom::Start(0))?;
        self.0.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.0.read_exact_at(buf, offset)
    }

    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        self.0.write_all_at(bytes, offset)
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }

    fn allocate(&mut self, len: u64) -> io::Result<()> {
        match rustix::fs::fallocate(&self.0, rustix::fs::FallocateFlags::empty(), 0, len) {
            Ok(()) => Ok(()),
            // A file system without fallocate: sparse growth, as before.
            Err(rustix::io::Errno::OPNOTSUPP) => self.0.set_len(len.max(self.0.metadata()?.len())),
            Err(e) => Err(e.into()),
        }
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.0.sync_data()
    }
}
