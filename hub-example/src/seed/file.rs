//! The seed document written to a file only its owner can read.

use std::path::{Path, PathBuf};

use super::{seed, SeedDocument, SeedError, SeedOptions};

/// Seeds and writes the document to `out` (pretty JSON). The output's folder
/// is checked before the database is touched.
pub fn seed_to_file(options: &SeedOptions, out: &Path) -> Result<SeedDocument, SeedFileError> {
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            return Err(SeedFileError::OutDir(dir.to_path_buf()));
        }
    }
    let doc = seed(options)?;
    let mut text = serde_json::to_string_pretty(&doc).expect("seed document serializes");
    text.push('\n');
    write_private(out, text.as_bytes()).map_err(|e| SeedFileError::Write(out.to_path_buf(), e))?;
    Ok(doc)
}

/// Writes `bytes` to `path`, readable and writable by its owner only (the
/// seed document holds bearer tokens): a new file is created with mode
/// 0600, an existing one is narrowed to it before anything is written.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    file.set_len(0)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Why seeding to a file failed.
#[derive(Debug, thiserror::Error)]
pub enum SeedFileError {
    /// Seeding failed.
    #[error(transparent)]
    Seed(#[from] SeedError),
    /// The output folder does not exist.
    #[error("output folder {0} does not exist")]
    OutDir(PathBuf),
    /// The document could not be written.
    #[error("cannot write {0}: {1}")]
    Write(PathBuf, std::io::Error),
}
