use perf_trace_core::{traced_phase, KeySet};

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub enum Phase {
    Capabilities,
    Messageability,
    ScopeCapabilities,
}

pub struct Agent {
    id: u32,
}

impl Agent {
    #[traced_phase(Phase::Capabilities)]
    pub fn capabilities(&self) -> Vec<&'static str> {
        if self.id == 0 {
            return Vec::new();
        }
        vec!["read", "write"]
    }

    #[traced_phase(Phase::Messageability)]
    fn rename(&mut self, id: u32) -> &mut Self {
        self.id = id;
        self
    }

    #[traced_phase(Phase::Capabilities)]
    fn into_id(self) -> u32 {
        self.id
    }
}

pub trait Scoped {
    fn scope(&self) -> u32;

    #[traced_phase(Phase::ScopeCapabilities)]
    fn scope_capabilities(&self) -> Vec<u32> {
        vec![self.scope()]
    }
}

impl Scoped for Agent {
    #[traced_phase(Phase::ScopeCapabilities)]
    fn scope(&self) -> u32 {
        self.id * 10
    }
}

impl<T: Scoped> Scoped for Vec<T> {
    #[traced_phase(Phase::ScopeCapabilities)]
    fn scope(&self) -> u32 {
        self.iter().map(Scoped::scope).sum()
    }
}

#[traced_phase(Phase::Messageability)]
unsafe fn raw_read(p: *const u32) -> u32 {
    unsafe { *p }
}

fn main() {
    let mut agent = Agent { id: 1 };
    assert_eq!(agent.capabilities(), ["read", "write"]);
    agent.rename(2);
    assert_eq!(agent.scope_capabilities(), [20]);
    assert_eq!(vec![Agent { id: 1 }, Agent { id: 2 }].scope(), 30);
    let x = 5;
    assert_eq!(unsafe { raw_read(&x) }, 5);
    assert_eq!(agent.into_id(), 2);
}
