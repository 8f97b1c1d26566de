//! What vgpu remotes, and how: one line per entry point, in one reviewed
//! place ([`table`]), next to the generated ABI table.
//!
//! The generated table ([`crate::FUNCTIONS`]) knows every export's name,
//! versions and parameter types. This table adds what a header cannot tell:
//!
//! - the **wire id** of the operation that carries the call (explicit,
//!   append-only, never reused);
//! - the **area** it belongs to: the module of the same name in
//!   `client/src/api`, `mediator/src/worker` and `sim/src/exports`;
//! - **how** it is remoted ([`Mode`]);
//! - **options** ([`Call::opts`]): `sync` (a synchronizing call: it reports
//!   the lane's deferred failure of a posted call instead of running),
//!   `posted(stream)` / `posted(all)` (it may be sent without waiting when
//!   the client can check what the driver checks at once; its work follows
//!   its stream's earlier posted work, or everything before it),
//!   `nocontext` (the worker does not make the calling thread's context
//!   current for it), `checked` (the worker runs its area's
//!   `check_<snake name>` on the request first: a refusal the driver
//!   would not make safely itself), `capture` (a `client` call answered
//!   in the client while no stream capture is open: its conformance test
//!   opens a capture on the fixture stream first, so that it reaches the
//!   worker);
//! - **parameter notes** ([`Call::notes`]), where the header's types are not
//!   enough: `optional` (an out-pointer that may be NULL), `in` / `out`
//!   (a pointer whose direction the `const` qualifier does not give),
//!   `array(COUNT)` (a pointer to `COUNT` elements), `string(LEN)` (an out
//!   character buffer of `LEN` bytes), `range(BYTES)` and
//!   `pitched(PITCH, WIDTH_BYTES, HEIGHT)` (a device range the worker checks
//!   against the session's live allocations before the driver sees it),
//!   `handles(FIELD: Kind, …)` (handles inside a struct passed by pointer),
//!   `destroys` (a handle the call destroys: once the driver succeeded, the
//!   worker forgets its id, so a second use is `CUDA_ERROR_INVALID_HANDLE`
//!   and never reaches the driver as a dangling pointer).
//!
//! Hand-written operations (copies and their fast paths, launches, module
//! loading, host memory, lanes) declare their wire fields here too
//! ([`WireOp`]), so every request and reply is a typed, fixed-layout struct.
//!
//! `cargo xtask gen-calls` reads this table and writes the typed wire
//! structs (`proto`), the client stubs, the worker's dispatch and calls, the
//! simulated device's exports, the recording test driver and one
//! conformance test per table call. See
//! `docs/adding-an-entry-point.md`.

mod table;

pub use table::{CALLS, MANUAL, OPS};

/// How an entry point is remoted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Everything is generated: the client stub (NULL checks, encoding,
    /// writing the outputs back), the wire structs, the worker's decode,
    /// driver call and reply, and the simulated device's export.
    Generated,
    /// The client side is written by hand (it keeps local state or answers
    /// locally); the wire structs, the worker side and the simulated
    /// device's export are generated.
    ClientWritten,
}

/// One entry point carried by an operation of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    /// The export, e.g. `cuCtxGetLimit`.
    pub name: &'static str,
    /// The area: a module name shared by the client, the worker and the sim.
    pub area: &'static str,
    /// The wire id of its operation.
    pub id: u16,
    pub mode: Mode,
    /// Options, as written in the table (see the module documentation).
    pub opts: &'static str,
    /// Parameter notes, as written in the table: `param: note, …`.
    pub notes: &'static str,
}

/// Entry points implemented by hand in the client over hand-written
/// operations ([`OPS`]) or answered locally, by area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Manual {
    pub area: &'static str,
    pub names: &'static [&'static str],
}

/// A hand-written operation: its wire fields are declared here; its client
/// and worker code are written by hand (the worker's handler is
/// `worker::<area>::<snake name>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WireOp {
    /// The operation's name, e.g. `MemcpyHtoD`.
    pub name: &'static str,
    pub area: &'static str,
    pub id: u16,
    /// Request fields, as written: `name: type, …` with types `u8`, `u16`,
    /// `u32`, `i32`, `u64`, `i64`, `f32`, `bool`, `devptr`, `bytes(N)` and
    /// `handle(Kind)`.
    pub request: &'static str,
    /// The request carries a blob after its fields.
    pub request_blob: bool,
    /// Reply fields, as for the request.
    pub reply: &'static str,
    /// The reply carries a blob after its fields.
    pub reply_blob: bool,
    /// Options: `posted`, `sync`, `sync_unless(FIELD)` (synchronizing
    /// unless the bool field is set), `nocontext`, `fd` (a descriptor
    /// follows a successful reply), `fd_in` (a descriptor follows the
    /// request).
    pub opts: &'static str,
    /// What the operation does, for `docs/protocol.md` and the generated code.
    pub doc: &'static str,
}

/// Builds [`CALLS`], [`MANUAL`] and [`OPS`] from the table's lines.
macro_rules! remote_table {
    (
        calls { $( $carea:ident : $cname:ident = $cid:literal $mode:ident
            $( ( $($copt:tt)* ) )? $( [ $($note:tt)* ] )? ; )* }
        manual { $( $marea:ident : $( $mname:ident ),+ ; )* }
        ops { $( $(#[doc = $odoc:literal])* $oarea:ident : $oname:ident = $oid:literal
            { $($req:tt)* } $( + $reqblob:ident )? => { $($rep:tt)* } $( + $repblob:ident )?
            $( ( $($oopt:tt)* ) )? ; )* }
    ) => {
        /// Every entry point carried by an operation of its own, in table order.
        pub static CALLS: &[$crate::remote::Call] = &[ $(
            $crate::remote::Call {
                name: stringify!($cname),
                area: stringify!($carea),
                id: $cid,
                mode: remote_table!(@mode $mode),
                opts: concat!("" $(, stringify!($($copt)*))?),
                notes: concat!("" $(, stringify!($($note)*))?),
            },
        )* ];

        /// Entry points written by hand in the client, by area.
        pub static MANUAL: &[$crate::remote::Manual] = &[ $(
            $crate::remote::Manual { area: stringify!($marea), names: &[$(stringify!($mname)),+] },
        )* ];

        /// Hand-written operations, in table order.
        pub static OPS: &[$crate::remote::WireOp] = &[ $(
            $crate::remote::WireOp {
                name: stringify!($oname),
                area: stringify!($oarea),
                id: $oid,
                request: stringify!($($req)*),
                request_blob: remote_table!(@blob $($reqblob)?),
                reply: stringify!($($rep)*),
                reply_blob: remote_table!(@blob $($repblob)?),
                opts: concat!("" $(, stringify!($($oopt)*))?),
                doc: concat!("" $(, $odoc, "\n")*),
            },
        )* ];
    };
    (@mode gen) => { $crate::remote::Mode::Generated };
    (@mode client) => { $crate::remote::Mode::ClientWritten };
    (@blob) => { false };
    (@blob blob) => { true };
}
pub(crate) use remote_table;
