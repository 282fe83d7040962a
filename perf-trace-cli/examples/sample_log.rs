//! Writes a sample log of the Hub's lines (or a plain service's) of about
//! the given size, for the throughput script:
//! `cargo run --release -p perf-trace-cli --example sample_log -- OUT BYTES [hub|plain|catalog|catalog-n1]`.

use std::io::{BufWriter, Write as _};

use perf_trace_cli::sample::{self, Profile, Sample};

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(out), Some(bytes)) = (
        args.first(),
        args.get(1).and_then(|b| b.parse::<u64>().ok()),
    ) else {
        eprintln!("usage: sample_log OUT BYTES [hub|plain|catalog|catalog-n1]");
        std::process::exit(2);
    };
    let profile = match args.get(2).map(String::as_str) {
        None | Some("hub") => Profile::Hub { gcp: false },
        Some("plain") => Profile::Plain,
        Some("catalog") => Profile::Catalog { n_plus_one: false },
        Some("catalog-n1") => Profile::Catalog { n_plus_one: true },
        Some(other) => {
            eprintln!("unknown profile {other}: hub, plain, catalog or catalog-n1");
            std::process::exit(2);
        }
    };
    // Write in chunks of lines until the file reaches the size asked for.
    let mut file = BufWriter::with_capacity(1 << 20, std::fs::File::create(out)?);
    let (mut written, mut seed) = (0u64, 0u64);
    while written < bytes {
        let mut chunk = Vec::with_capacity(4 << 20);
        sample::write(
            &mut chunk,
            &Sample {
                profile,
                requests: 4000,
                seed,
                extra_calls: 0,
                slower_percent: 0,
            },
        )?;
        file.write_all(&chunk)?;
        written += chunk.len() as u64;
        seed += 1;
    }
    file.flush()
}
