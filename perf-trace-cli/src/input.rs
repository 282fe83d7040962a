//! Where lines come from: files, glob patterns or standard input, each
//! gzip'd or not (told by its first bytes, not its name), read as a stream
//! of byte lines.

use std::fs::File;
use std::io::{self, BufRead, BufReader, IsTerminal as _, Read};
use std::path::PathBuf;

use anyhow::{bail, Context as _};
use flate2::read::MultiGzDecoder;
use indicatif::{ProgressBar, ProgressStyle};

/// Files at least this large get a progress bar when standard error is a
/// terminal.
const PROGRESS_FROM_BYTES: u64 = 64 << 20;

/// Read buffer size: large reads keep the line scan ahead of the disk.
const BUFFER: usize = 1 << 20;

/// One input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Standard input (`-`, or no argument at all).
    Stdin,
    /// A file.
    File(PathBuf),
}

impl Source {
    /// How messages name it.
    pub fn name(&self) -> String {
        match self {
            Source::Stdin => "<stdin>".to_owned(),
            Source::File(path) => path.display().to_string(),
        }
    }
}

/// The inputs named by `args`: `-` is standard input, an existing path is
/// that file, anything else a glob pattern that must match at least one
/// file. No argument at all reads standard input, unless it is a terminal.
pub fn sources(args: &[String]) -> anyhow::Result<Vec<Source>> {
    if args.is_empty() {
        if io::stdin().is_terminal() {
            bail!(
                "no LOG given and standard input is a terminal: name a log file, or pipe lines in"
            );
        }
        return Ok(vec![Source::Stdin]);
    }
    let mut out = Vec::new();
    for arg in args {
        if arg == "-" {
            out.push(Source::Stdin);
            continue;
        }
        let path = PathBuf::from(arg);
        if path.exists() {
            out.push(Source::File(path));
            continue;
        }
        let mut matched: Vec<PathBuf> = glob::glob(arg)
            .with_context(|| format!("{arg}: neither a file nor a glob pattern"))?
            .filter_map(Result::ok)
            .filter(|p| p.is_file())
            .collect();
        if matched.is_empty() {
            bail!("{arg}: no such file, and no file matches it as a pattern");
        }
        matched.sort();
        out.extend(matched.into_iter().map(Source::File));
    }
    Ok(out)
}

fn progress_bar(len: u64, name: &str) -> ProgressBar {
    if len < PROGRESS_FROM_BYTES || !io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(
            "{msg} {wide_bar} {bytes}/{total_bytes} {bytes_per_sec} {eta}",
        )
        .expect("a valid template"),
    );
    bar.set_message(name.to_owned());
    bar
}

/// Opens a source as buffered text, decompressing gzip when its first two
/// bytes are gzip's magic number. The progress bar (hidden unless the file
/// is large and standard error a terminal) counts the bytes read from disk.
pub fn open(source: &Source) -> anyhow::Result<(Box<dyn BufRead>, ProgressBar)> {
    let (raw, bar): (Box<dyn Read>, ProgressBar) = match source {
        Source::Stdin => (Box::new(io::stdin().lock()), ProgressBar::hidden()),
        Source::File(path) => {
            let file = File::open(path).with_context(|| format!("open {}", path.display()))?;
            let meta = file
                .metadata()
                .with_context(|| format!("open {}", path.display()))?;
            if meta.is_dir() {
                bail!("{}: is a directory", path.display());
            }
            let bar = progress_bar(meta.len(), &source.name());
            (Box::new(bar.wrap_read(file)), bar)
        }
    };
    let mut buffered = BufReader::with_capacity(BUFFER, raw);
    let head = buffered
        .fill_buf()
        .with_context(|| format!("read {}", source.name()))?;
    let reader: Box<dyn BufRead> = if head.starts_with(&[0x1f, 0x8b]) {
        Box::new(BufReader::with_capacity(
            BUFFER,
            MultiGzDecoder::new(buffered),
        ))
    } else {
        Box::new(buffered)
    };
    Ok((reader, bar))
}

/// Calls `each` with every line of `source` (without its line ending) and
/// its 1-based number.
pub fn for_each_line(source: &Source, mut each: impl FnMut(&[u8], u64)) -> anyhow::Result<()> {
    let (mut reader, bar) = open(source)?;
    let mut buf = Vec::with_capacity(8 << 10);
    let mut number = 0u64;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .with_context(|| format!("read {} after line {number}", source.name()))?;
        if n == 0 {
            break;
        }
        number += 1;
        let mut line = buf.as_slice();
        if let Some(rest) = line.strip_suffix(b"\n") {
            line = rest.strip_suffix(b"\r").unwrap_or(rest);
        }
        each(line, number);
    }
    bar.finish_and_clear();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn reads_plain_and_gzip_files_alike() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("a.log");
        std::fs::write(&plain, "one\r\ntwo\nthree").unwrap();
        let gz = dir.path().join("b.log.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(b"one\ntwo\nthree\n").unwrap();
        std::fs::write(&gz, enc.finish().unwrap()).unwrap();
        for path in [plain, gz] {
            let mut lines = Vec::new();
            for_each_line(&Source::File(path), |l, n| {
                lines.push((String::from_utf8(l.to_vec()).unwrap(), n))
            })
            .unwrap();
            let want = [("one", 1), ("two", 2), ("three", 3)].map(|(s, n)| (s.to_owned(), n));
            assert_eq!(lines, want);
        }
    }

    #[test]
    fn arguments_name_files_patterns_and_stdin() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["x1.log", "x2.log", "y.txt"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        let pattern = format!("{}/x*.log", dir.path().display());
        let got = sources(&[pattern, "-".to_owned()]).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[2], Source::Stdin);
        // No argument reads standard input, unless a person would be left
        // typing into it (the integration tests pipe into it).
        if !io::stdin().is_terminal() {
            assert_eq!(sources(&[]).unwrap(), [Source::Stdin]);
        }
        let missing = format!("{}/nothing*.log", dir.path().display());
        let e = sources(&[missing]).unwrap_err().to_string();
        assert!(e.contains("no file matches"), "{e}");
        let e = for_each_line(&Source::File(dir.path().to_owned()), |_, _| {}).unwrap_err();
        assert!(format!("{e:#}").contains("is a directory"), "{e:#}");
    }
}
