//! The per-thread current-context stack, kept entirely in the client: push,
//! pop and set-current never cost a round trip. Each request carries the top
//! of the stack, and the worker's lane binds it lazily.

use std::cell::{Cell, RefCell};

/// A thread's stack, tagged with the fork epoch it belongs to: in a forked
/// child the inherited stack names the parent's contexts, so it is dropped
/// at the child's first use (the child starts with no current context).
struct Stack {
    epoch: u64,
    ctxs: Vec<u64>,
}

thread_local! {
    static STACK: RefCell<Stack> = const {
        RefCell::new(Stack {
            epoch: 0,
            ctxs: Vec::new(),
        })
    };
    /// (fork epoch, top of the stack), kept beside `STACK`: plain integers
    /// need no destructor, so this still answers while the thread's locals
    /// are torn down (TLS destructors, and `atexit` handlers, which glibc
    /// runs after the main thread's TLS destructors). There the stack
    /// shrinks to this one entry.
    static TOP: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

fn with<R>(f: impl FnOnce(&mut Vec<u64>) -> R) -> R {
    let epoch = crate::runtime::fork_epoch();
    let mut f = Some(f);
    let on_stack = STACK.try_with(|s| {
        let f = f.take().expect("try_with runs its closure at most once");
        let mut s = s.borrow_mut();
        if s.epoch != epoch {
            s.epoch = epoch;
            s.ctxs.clear();
        }
        let r = f(&mut s.ctxs);
        TOP.set((epoch, s.ctxs.last().copied().unwrap_or(0)));
        r
    });
    if let Ok(r) = on_stack {
        return r;
    }
    // The thread's locals are being torn down: a one-entry stack in `TOP`.
    let f = f
        .take()
        .expect("try_with failed without running its closure");
    let mut ctxs = match TOP.get() {
        (e, top) if e == epoch && top != 0 => vec![top],
        _ => Vec::new(),
    };
    let r = f(&mut ctxs);
    TOP.set((epoch, ctxs.last().copied().unwrap_or(0)));
    r
}

/// The calling thread's current context id, 0 when there is none. Read
/// from `TOP`, which every change of the stack keeps equal to its top: one
/// thread-local read, on every call.
pub fn current() -> u64 {
    match TOP.try_with(Cell::get) {
        Ok((epoch, top)) if epoch == crate::runtime::fork_epoch() => top,
        _ => 0,
    }
}

/// `cuCtxPushCurrent`.
pub fn push(ctx: u64) {
    with(|s| s.push(ctx));
}

/// `cuCtxPopCurrent`: the popped context, if the stack was not empty.
pub fn pop() -> Option<u64> {
    with(|s| s.pop())
}

/// `cuCtxSetCurrent`: replaces the top; 0 pops (a no-op on an empty stack).
pub fn set_current(ctx: u64) {
    with(|s| {
        if ctx == 0 {
            s.pop();
        } else if let Some(top) = s.last_mut() {
            *top = ctx;
        } else {
            s.push(ctx);
        }
    });
}

/// `cuCtxDestroy` on the calling thread: if `ctx` is current, pop it.
pub fn forget_if_current(ctx: u64) {
    with(|s| {
        if s.last() == Some(&ctx) {
            s.pop();
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_semantics() {
        assert_eq!(current(), 0);
        set_current(5);
        assert_eq!(current(), 5);
        push(6);
        assert_eq!(current(), 6);
        set_current(7);
        assert_eq!(pop(), Some(7));
        assert_eq!(current(), 5);
        set_current(0);
        assert_eq!(current(), 0);
        assert_eq!(pop(), None);
        set_current(0);
        assert_eq!(current(), 0);
    }
}
