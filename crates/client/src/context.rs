//! The per-thread current-context stack, kept entirely in the client: push,
//! pop and set-current never cost a round trip. Each request carries the top
//! of the stack, and the worker's lane binds it lazily.

use std::cell::RefCell;

thread_local! {
    static STACK: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

fn with<R>(f: impl FnOnce(&mut Vec<u64>) -> R, torn_down: R) -> R {
    STACK
        .try_with(|s| f(&mut s.borrow_mut()))
        .unwrap_or(torn_down)
}

/// The calling thread's current context id, 0 when there is none.
pub fn current() -> u64 {
    with(|s| s.last().copied().unwrap_or(0), 0)
}

/// `cuCtxPushCurrent`.
pub fn push(ctx: u64) {
    with(|s| s.push(ctx), ());
}

/// `cuCtxPopCurrent`: the popped context, if the stack was not empty.
pub fn pop() -> Option<u64> {
    with(|s| s.pop(), None)
}

/// `cuCtxSetCurrent`: replaces the top; 0 pops (a no-op on an empty stack).
pub fn set_current(ctx: u64) {
    with(
        |s| {
            if ctx == 0 {
                s.pop();
            } else if let Some(top) = s.last_mut() {
                *top = ctx;
            } else {
                s.push(ctx);
            }
        },
        (),
    );
}

/// `cuCtxDestroy` on the calling thread: if `ctx` is current, pop it.
pub fn forget_if_current(ctx: u64) {
    with(
        |s| {
            if s.last() == Some(&ctx) {
                s.pop();
            }
        },
        (),
    );
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
