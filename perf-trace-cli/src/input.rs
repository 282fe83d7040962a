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

/// Lines longer than this (the bytes before their `\n`, so a `\r` counts)
/// are skipped unread by default: 1 MiB, a thousand times a long perf line.
pub const DEFAULT_MAX_LINE: usize = 1 << 20;

/// One line of input as [`for_each_line_bounded`] hands it over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line<'a> {
    /// The line, without its line ending.
    Whole(&'a [u8]),
    /// A line longer than the bound: passed over without being held, its
    /// length in bytes (before its `\n`) given instead.
    TooLong(u64),
}

/// Calls `each` with every line of `source` (without its line ending) and
/// its 1-based number. Lines longer than [`DEFAULT_MAX_LINE`] are passed
/// over; [`for_each_line_bounded`] tells of them.
pub fn for_each_line(source: &Source, mut each: impl FnMut(&[u8], u64)) -> anyhow::Result<()> {
    for_each_line_bounded(source, DEFAULT_MAX_LINE, |line, number| {
        if let Line::Whole(bytes) = line {
            each(bytes, number);
        }
    })
}

/// Calls `each` with every line of `source` and its 1-based number; a line
/// longer than `max_line` bytes comes as [`Line::TooLong`], read through
/// without being kept, so memory stays within the read buffers and
/// `max_line` whatever the input (a gzip bomb of zeros is one such line).
pub fn for_each_line_bounded(
    source: &Source,
    max_line: usize,
    mut each: impl FnMut(Line<'_>, u64),
) -> anyhow::Result<()> {
    let (mut reader, bar) = open(source)?;
    // The part of a line that spans buffer refills; never above `max_line`.
    let mut buf: Vec<u8> = Vec::new();
    // The length so far of a line found to be too long.
    let mut too_long: Option<u64> = None;
    let mut number = 0u64;
    loop {
        let chunk = reader
            .fill_buf()
            .with_context(|| format!("read {} after line {number}", source.name()))?;
        if chunk.is_empty() {
            if too_long.is_some() || !buf.is_empty() {
                number += 1;
                deliver(&mut each, &mut buf, &mut too_long, number);
            }
            break;
        }
        let (part, used, ends) = match memchr::memchr(b'\n', chunk) {
            Some(at) => (&chunk[..at], at + 1, true),
            None => (chunk, chunk.len(), false),
        };
        if ends && buf.is_empty() && too_long.is_none() && part.len() <= max_line {
            // The whole line in the buffer: handed over without a copy.
            number += 1;
            each(Line::Whole(trim_cr(part)), number);
        } else {
            match &mut too_long {
                Some(len) => *len += part.len() as u64,
                None if buf.len() + part.len() > max_line => {
                    too_long = Some((buf.len() + part.len()) as u64);
                    buf.clear();
                }
                None => buf.extend_from_slice(part),
            }
            if ends {
                number += 1;
                deliver(&mut each, &mut buf, &mut too_long, number);
            }
        }
        reader.consume(used);
    }
    bar.finish_and_clear();
    Ok(())
}

/// Hands over the line gathered in `buf` (or the too-long one) and starts
/// the next.
fn deliver(
    each: &mut impl FnMut(Line<'_>, u64),
    buf: &mut Vec<u8>,
    too_long: &mut Option<u64>,
    number: u64,
) {
    match too_long.take() {
        Some(len) => each(Line::TooLong(len), number),
        None => each(Line::Whole(trim_cr(buf)), number),
    }
    buf.clear();
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
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
    fn lines_over_the_bound_are_told_by_length_across_refills() {
        // Lines of 1 to 299 bytes over several read buffers, so that lines
        // straddle refills; those over 200 bytes must come as too long.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mixed.log");
        let mut text = Vec::new();
        let mut want = Vec::new();
        let mut len = 1usize;
        while text.len() < 3 * BUFFER + 1000 {
            let line = vec![b'a' + (len % 26) as u8; len];
            // A `\r` before the `\n` counts towards the bound.
            let cr = len.is_multiple_of(7);
            let raw = (len + usize::from(cr)) as u64;
            want.push(if raw > 200 {
                Err(raw)
            } else {
                Ok(line.clone())
            });
            text.extend_from_slice(&line);
            text.extend_from_slice(if cr { b"\r\n" } else { b"\n" });
            len = len * 31 % 299 + 1;
        }
        // The last line has no line end.
        text.extend_from_slice(b"tail");
        want.push(Ok(b"tail".to_vec()));
        std::fs::write(&path, &text).unwrap();
        let mut got = Vec::new();
        for_each_line_bounded(&Source::File(path), 200, |line, number| {
            assert_eq!(number, got.len() as u64 + 1);
            got.push(match line {
                Line::Whole(bytes) => Ok(bytes.to_vec()),
                Line::TooLong(len) => Err(len),
            });
        })
        .unwrap();
        assert_eq!(got.len(), want.len());
        assert!(got == want, "a line read wrong");
        assert!(want.iter().any(Result::is_err) && want.iter().any(Result::is_ok));
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
