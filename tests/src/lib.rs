//! Workspace-level tests live in `tests/`. The READMEs' blocks are
//! compiled by `tests/readme`.
