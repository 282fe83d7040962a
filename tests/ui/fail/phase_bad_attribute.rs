use perf_trace_core::traced_phase;

#[path = "../support/phases.rs"]
mod phases;
use phases::Phase;

#[traced_phase]
fn no_key() {}

#[traced_phase(Phase::Enrich, Phase::ListDbRead)]
fn two_keys() {}

#[traced_phase(Phase::Enrich, sample = 10)]
fn unknown_option() {}

#[traced_phase(Phase::Enrich)]
#[traced_phase(Phase::ListDbRead)]
fn twice() {}

#[traced_phase(Phase::Enrich)]
const fn at_compile_time() -> u32 {
    1
}

trait Lister {
    #[traced_phase(Phase::ListDbRead)]
    fn list(&self) -> usize;
}

fn main() {
    no_key();
    two_keys();
    unknown_option();
    twice();
    let _ = at_compile_time();
}
