//! Device `printf`: kernels append their output to a buffer, which the
//! simulated driver writes to the process's standard output where the real
//! driver flushes its printf buffer: at context, stream and event
//! synchronization, module unload and context destruction. The messages of
//! failed device assertions go to standard error at the same points.

use std::io::Write;

use crate::state::State;

/// Writes the buffered device output to standard output, and assertion
/// messages to standard error.
pub(crate) fn flush(st: &mut State) {
    if !st.ext.printf.is_empty() {
        let out = std::mem::take(&mut st.ext.printf);
        let mut stdout = std::io::stdout().lock();
        // Output that cannot be written is lost, as the driver's is.
        let _ = stdout.write_all(&out).and_then(|()| stdout.flush());
    }
    if !st.ext.asserted.is_empty() {
        let out = std::mem::take(&mut st.ext.asserted);
        let _ = std::io::stderr().lock().write_all(&out);
    }
}
