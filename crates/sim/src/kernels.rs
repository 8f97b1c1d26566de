//! The built-in CPU kernels, their parameter layouts, and bounds-checked execution.

use std::ffi::c_void;

use crate::cu::{CUdeviceptr, CUresult};
use crate::error::{err, Res};

/// A built-in kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// `vector_add(const float* a, const float* b, float* c, int n)`: `c[i] = a[i] + b[i]`.
    VectorAdd,
    /// `saxpy(float a, const float* x, float* y, int n)`: `y[i] = a * x[i] + y[i]`.
    Saxpy,
    /// `fill_u32(unsigned* p, unsigned v, int n)`: `p[i] = v`.
    FillU32,
    /// `print_u32(unsigned v, int n)`: thread `i < n` prints
    /// `thread {i} value {v}` with device `printf`.
    PrintU32,
    /// `assert_lt(unsigned v, int n)`: thread `i < n` asserts `i < v`; a
    /// failed assertion is `CUDA_ERROR_ASSERT`, with one message per
    /// failing thread for the driver's standard error.
    AssertLt,
}

/// The C type of one kernel parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    Ptr,
    F32,
    I32,
    U32,
}

impl Ty {
    /// Size in bytes, which is also the natural alignment.
    fn size(self) -> usize {
        match self {
            Ty::Ptr => 8,
            Ty::F32 | Ty::I32 | Ty::U32 => 4,
        }
    }
}

/// One argument value read from `kernelParams`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Arg {
    Ptr(CUdeviceptr),
    F32(f32),
    I32(i32),
    U32(u32),
}

impl Arg {
    fn ptr(self) -> CUdeviceptr {
        match self {
            Arg::Ptr(p) => p,
            _ => 0,
        }
    }
    fn f32(self) -> f32 {
        match self {
            Arg::F32(v) => v,
            _ => 0.0,
        }
    }
    fn u32(self) -> u32 {
        match self {
            Arg::U32(v) => v,
            _ => 0,
        }
    }
    fn i32(self) -> i32 {
        match self {
            Arg::I32(v) => v,
            _ => 0,
        }
    }
}

/// An asynchronous fault raised by a kernel: it becomes the context's sticky error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fault {
    pub code: CUresult,
    pub why: String,
}

impl Kernel {
    /// Every built-in kernel.
    pub const ALL: [Kernel; 5] = [
        Kernel::VectorAdd,
        Kernel::Saxpy,
        Kernel::FillU32,
        Kernel::PrintU32,
        Kernel::AssertLt,
    ];

    /// The kernel's name in modules.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::VectorAdd => "vector_add",
            Kernel::Saxpy => "saxpy",
            Kernel::FillU32 => "fill_u32",
            Kernel::PrintU32 => "print_u32",
            Kernel::AssertLt => "assert_lt",
        }
    }

    /// The built-in kernel called `name`, if any.
    pub fn by_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    fn params(self) -> &'static [Ty] {
        match self {
            Kernel::VectorAdd => &[Ty::Ptr, Ty::Ptr, Ty::Ptr, Ty::I32],
            Kernel::Saxpy => &[Ty::F32, Ty::Ptr, Ty::Ptr, Ty::I32],
            Kernel::FillU32 => &[Ty::Ptr, Ty::U32, Ty::I32],
            Kernel::PrintU32 | Kernel::AssertLt => &[Ty::U32, Ty::I32],
        }
    }

    /// `cuFuncGetParamInfo`: (offset, size) of parameter `index` with natural C alignment.
    pub fn param_info(self, index: usize) -> Option<(usize, usize)> {
        let params = self.params();
        let mut offset: usize = 0;
        for (i, ty) in params.iter().enumerate() {
            let size = ty.size();
            offset = offset.next_multiple_of(size);
            if i == index {
                return Some((offset, size));
            }
            offset += size;
        }
        None
    }

    /// Each argument's bytes from `kernelParams`, to launch again later (a captured
    /// launch).
    ///
    /// # Safety
    /// As for [`Kernel::launch`]'s `params`.
    pub unsafe fn arg_bytes(self, params: *const *const c_void) -> Res<Vec<Vec<u8>>> {
        // SAFETY: forwarded from this function's contract.
        let args = unsafe { self.read_args(params) }?;
        Ok(args
            .iter()
            .map(|a| match *a {
                Arg::Ptr(p) => p.to_ne_bytes().to_vec(),
                Arg::F32(x) => x.to_ne_bytes().to_vec(),
                Arg::I32(x) => x.to_ne_bytes().to_vec(),
                Arg::U32(x) => x.to_ne_bytes().to_vec(),
            })
            .collect())
    }

    /// Reads the arguments from `kernelParams`.
    ///
    /// # Safety
    /// `params` must be NULL or point to one pointer per parameter, each NULL or pointing to
    /// a value of the parameter's type (as `cuLaunchKernel` requires).
    unsafe fn read_args(self, params: *const *const c_void) -> Res<Vec<Arg>> {
        if params.is_null() {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("kernelParams is NULL but {} takes parameters", self.name()),
            );
        }
        let mut args = Vec::with_capacity(self.params().len());
        for (i, ty) in self.params().iter().enumerate() {
            // SAFETY: the contract gives one readable pointer slot per parameter.
            let p = unsafe { params.add(i).read_unaligned() };
            if p.is_null() {
                return err(
                    CUresult::CUDA_ERROR_INVALID_VALUE,
                    format!("kernelParams[{i}] is NULL"),
                );
            }
            // SAFETY: by the contract, `p` points to a value of type `ty`.
            let arg = unsafe {
                match ty {
                    Ty::Ptr => Arg::Ptr(p.cast::<u64>().read_unaligned()),
                    Ty::F32 => Arg::F32(p.cast::<f32>().read_unaligned()),
                    Ty::I32 => Arg::I32(p.cast::<i32>().read_unaligned()),
                    Ty::U32 => Arg::U32(p.cast::<u32>().read_unaligned()),
                }
            };
            args.push(arg);
        }
        Ok(args)
    }

    /// Reads the arguments and runs the kernel for thread indices `0..min(n, threads)`.
    /// `range(addr, len)` resolves the device memory the kernel touches; what it prints
    /// (device `printf`) is appended to `printed`. Argument errors are returned at once;
    /// memory faults come back as `Ok(Err(fault))` with no memory touched.
    ///
    /// # Safety
    /// `params` as for [`Kernel::read_args`]; a pointer `range(addr, len)` returns must
    /// point at address `addr` and be valid for reads and writes of `len` bytes until this
    /// call returns.
    pub unsafe fn launch(
        self,
        range: impl Fn(CUdeviceptr, usize) -> Option<*mut u8>,
        params: *const *const c_void,
        threads: u128,
        printed: &mut Vec<u8>,
    ) -> Res<Result<(), Fault>> {
        // SAFETY: forwarded contract.
        let args = unsafe { self.read_args(params) }?;
        // SAFETY: forwarded contract.
        Ok(unsafe { self.execute(&range, &args, threads, printed) })
    }

    /// # Safety
    /// As for [`Kernel::launch`] about `range`.
    unsafe fn execute(
        self,
        range: &impl Fn(CUdeviceptr, usize) -> Option<*mut u8>,
        args: &[Arg],
        threads: u128,
        printed: &mut Vec<u8>,
    ) -> Result<(), Fault> {
        let n_arg = match self {
            Kernel::VectorAdd | Kernel::Saxpy => args[3].i32(),
            Kernel::FillU32 => args[2].i32(),
            Kernel::PrintU32 | Kernel::AssertLt => args[1].i32(),
        };
        let n = u128::try_from(n_arg).unwrap_or(0).min(threads);
        // n <= i32::MAX, so it fits in usize.
        let n = usize::try_from(n).unwrap_or(0);
        if n == 0 {
            return Ok(());
        }
        match self {
            Kernel::VectorAdd => {
                let a = span(range, args[0].ptr(), n, "a")?.cast::<f32>();
                let b = span(range, args[1].ptr(), n, "b")?.cast::<f32>();
                let c = span(range, args[2].ptr(), n, "c")?.cast::<f32>();
                for i in 0..n {
                    // SAFETY: each of a, b, c spans `n` 4-byte elements that `range` resolved
                    // (checked by `span`), valid by this function's contract; they may alias,
                    // so raw accesses only.
                    unsafe { c.add(i).write(a.add(i).read() + b.add(i).read()) };
                }
            }
            Kernel::Saxpy => {
                let a = args[0].f32();
                let x = span(range, args[1].ptr(), n, "x")?.cast::<f32>();
                let y = span(range, args[2].ptr(), n, "y")?.cast::<f32>();
                for i in 0..n {
                    // SAFETY: x and y span `n` 4-byte elements that `range` resolved.
                    unsafe { y.add(i).write(a * x.add(i).read() + y.add(i).read()) };
                }
            }
            Kernel::FillU32 => {
                let v = args[1].u32();
                let p = span(range, args[0].ptr(), n, "p")?.cast::<u32>();
                for i in 0..n {
                    // SAFETY: p spans `n` 4-byte elements that `range` resolved.
                    unsafe { p.add(i).write(v) };
                }
            }
            Kernel::PrintU32 => {
                let v = args[0].u32();
                for i in 0..n {
                    printed.extend_from_slice(format!("thread {i} value {v}\n").as_bytes());
                }
            }
            Kernel::AssertLt => {
                let v = usize::try_from(args[0].u32()).unwrap_or(usize::MAX);
                let failed: String = (v..n)
                    .map(|i| {
                        format!(
                            "sim.cu:1: void assert_lt(unsigned int, int): thread: [{i}] \
                             Assertion `i < v` failed.\n"
                        )
                    })
                    .collect();
                if !failed.is_empty() {
                    return Err(Fault {
                        code: CUresult::CUDA_ERROR_ASSERT,
                        why: failed,
                    });
                }
            }
        }
        Ok(())
    }
}

/// Checks that `n` 4-byte elements at `addr` are aligned and that `range` resolves them.
fn span(
    range: &impl Fn(CUdeviceptr, usize) -> Option<*mut u8>,
    addr: CUdeviceptr,
    n: usize,
    what: &str,
) -> Result<*mut u8, Fault> {
    if !addr.is_multiple_of(4) {
        return Err(Fault {
            code: CUresult::CUDA_ERROR_MISALIGNED_ADDRESS,
            why: format!("parameter {what} = {addr:#x} is not 4-byte aligned"),
        });
    }
    let len = n.checked_mul(4);
    match len.and_then(|len| range(addr, len)) {
        Some(p) => Ok(p),
        None => Err(Fault {
            code: CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
            why: format!("parameter {what}: {n} elements at {addr:#x} leave the live allocations"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts() {
        let v: Vec<_> = (0..5).map(|i| Kernel::VectorAdd.param_info(i)).collect();
        assert_eq!(
            v,
            [
                Some((0, 8)),
                Some((8, 8)),
                Some((16, 8)),
                Some((24, 4)),
                None
            ]
        );
        let s: Vec<_> = (0..5).map(|i| Kernel::Saxpy.param_info(i)).collect();
        assert_eq!(
            s,
            [
                Some((0, 4)),
                Some((8, 8)),
                Some((16, 8)),
                Some((24, 4)),
                None
            ]
        );
        let f: Vec<_> = (0..4).map(|i| Kernel::FillU32.param_info(i)).collect();
        assert_eq!(f, [Some((0, 8)), Some((8, 4)), Some((12, 4)), None]);
    }

    #[test]
    fn names() {
        for k in Kernel::ALL {
            assert_eq!(Kernel::by_name(k.name()), Some(k));
        }
        assert_eq!(Kernel::by_name("matmul"), None);
    }
}
