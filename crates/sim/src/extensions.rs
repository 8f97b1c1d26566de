//! The tables of the CUDA 12 entry points, kept in [`State::ext`]: libraries and kernels,
//! function attributes, registered and allocated host memory, and per-allocation pointer
//! facts (buffer ids, stream-ordered origin).

use crate::funcattr::Attrs;
use crate::hostmem::Host;
use crate::library::Libraries;
use crate::pointer::Facts;
use crate::state::State;

/// Every table of the CUDA 12 entry points.
#[derive(Debug, Default)]
pub(crate) struct Ext {
    pub libraries: Libraries,
    pub attrs: Attrs,
    pub host: Host,
    pub facts: Facts,
}

/// Forgets what context `ctx` owned once its resources are released: registered and
/// allocated host memory, facts about freed allocations, attributes of dead functions.
pub(crate) fn release_context(st: &mut State, ctx: usize) {
    st.ext.host.release_context(ctx);
    let allocs = &st.allocs;
    st.ext.facts.retain(|base| allocs.contains_key(&base));
    let functions = &st.functions;
    st.ext
        .attrs
        .retain_functions(|f| functions.contains_key(&f));
}

/// Forgets what was known about the allocation at `base`, which was just freed.
pub(crate) fn forget_alloc(st: &mut State, base: u64) {
    st.ext.facts.forget(base);
}
