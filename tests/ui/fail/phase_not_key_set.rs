use perf_trace_core::traced_phase;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Color {
    Red,
    Green,
}

#[traced_phase(Color::Red)]
fn paint() -> Color {
    Color::Green
}

fn main() {
    paint();
}
