//! A real guest under QEMU (tests/vm/mod.rs): the harness itself, and the
//! facts about QEMU's ivshmem devices that the ivshmem transport relies on,
//! checked from inside the guest and from the host.
//!
//! - `ivshmem-plain`: BAR2 is a host file; what the host writes there the
//!   guest reads through `resource2`, and what the guest writes the host
//!   reads back. BAR0 is 256 bytes of registers, there is no BAR1, and
//!   IVPosition reads 0.
//! - `ivshmem-doorbell`: QEMU takes its shared memory and eventfds from an
//!   ivshmem server (the test's own, `vm::ivshmem_server`) while it starts;
//!   the guest sees the id the server gave it in IVPosition, BAR1 holds
//!   the MSI-X table, and a Doorbell write `(peer << 16) | vector` reaches
//!   that peer's eventfd for that vector. The client's PCI discovery
//!   (`vgpu status`) finds the device.
//! - Host → guest: the device interrupts only through MSI-X, which guest
//!   user space can receive as eventfds through `vfio-pci` when the guest
//!   has a virtual IOMMU (and sets Bus Master Enable).
//! - BAR2's size must be a power of two: QEMU 7.2 aborts on any other.
//!
//! Each test skips (with a message) only where QEMU is not installed and
//! the run is not CI; see `vm::qemu`.

mod common;
mod vm;

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use vm::ivshmem_server::{IvshmemServer, HOST_PEER};
use vm::{Device, Guest, GuestRun, GuestSpec};

/// ivshmem_probe.c's layout of the shared memory.
const MAGIC: u64 = u64::from_le_bytes(*b"VGPUPRB1");
const ANSWER_XOR: u64 = 0x5a5a_5a5a_5a5a_5a5a;
const PATTERN_AT: u64 = 4096;
const ANSWER_AT: u64 = 24;
/// BAR2's size in these tests (a power of two, as QEMU requires).
const SHM_SIZE: u64 = 4 << 20;
/// BAR0: the 256 bytes of ivshmem registers.
const REGISTERS_SIZE: u64 = 256;

/// Where the probe lands in the guest.
const PROBE: &str = "/opt/vgpu-test/ivshmem_probe";
/// Where the `vgpu` command lands in the guest.
const VGPU: &str = "/usr/bin/vgpu";

/// A seed that differs from run to run.
fn seed() -> u64 {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970");
    u64::try_from(t.as_nanos() & u128::from(u64::MAX)).expect("masked to 64 bits")
}

/// The probe, compiled for this host (and so for the guest, which runs
/// the host's own libraries).
fn probe(dir: &Path) -> std::path::PathBuf {
    vm::compile_c(&vm::repo_root().join("tests/vm/ivshmem_probe.c"), dir)
}

/// Writes the probe's header and pattern into the shared memory `shm`.
fn write_challenge(shm: &std::fs::File, seed: u64) -> Vec<u8> {
    let len = SHM_SIZE / 2 - PATTERN_AT;
    let data = common::pattern(seed, usize::try_from(len).expect("fits usize"));
    let mut head = Vec::new();
    for word in [MAGIC, seed, len, 0] {
        head.extend_from_slice(&word.to_le_bytes());
    }
    shm.write_all_at(&head, 0).expect("write the header");
    shm.write_all_at(&data, PATTERN_AT)
        .expect("write the pattern");
    data
}

/// Checks the guest's answer in the shared memory: the answer word, and
/// the complement of every pattern byte in the second half.
#[track_caller]
fn check_answer(shm: &std::fs::File, seed: u64, data: &[u8], run: &GuestRun) {
    let mut word = [0u8; 8];
    shm.read_exact_at(&mut word, ANSWER_AT)
        .expect("read the answer");
    assert_eq!(
        u64::from_le_bytes(word),
        seed ^ ANSWER_XOR,
        "the guest's answer word is wrong or missing:\n{run}"
    );
    let mut back = vec![0u8; data.len()];
    shm.read_exact_at(&mut back, SHM_SIZE / 2)
        .expect("read the guest's bytes");
    let want: Vec<u8> = data.iter().map(|b| !b).collect();
    common::assert_same(&want, &back, "the complement the guest wrote into BAR2");
}

/// Reports how long the guest took to boot (CI's log keeps it).
fn report(test: &str, run: &GuestRun) {
    eprintln!(
        "{test}: {:?} guest ready after {:?}, ended after {:?}",
        run.accel, run.boot_time, run.elapsed
    );
}

/// The harness itself: a dynamically linked program runs in the guest
/// (its libraries came from the host's `ldd`), `/proc` and `/sys` are
/// mounted, kernel modules load, the commands' output reaches the console,
/// and their exit status comes back, here a chosen non-zero one.
#[test]
fn guest_runs_commands_and_reports_their_status() {
    let Some(qemu) = vm::qemu("guest_runs_commands_and_reports_their_status") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let spec = GuestSpec {
        files: vec![(probe(dir.path()), PROBE.into())],
        init_commands: vec![
            "echo kernel $(uname -r)".into(),
            "test -e /proc/self/status && echo ok proc".into(),
            "test -d /sys/bus/pci/devices && echo ok sysfs".into(),
            // No ivshmem device: the probe runs (dynamic linking works) and
            // says so.
            format!("{PROBE} || echo probe exited $?"),
            "test -d /sys/module/uio_pci_generic && echo ok module".into(),
            "exit 7".into(),
        ],
        modules: vec!["uio".into(), "uio_pci_generic".into()],
        ..GuestSpec::default()
    };
    let run = Guest::boot(&qemu, &spec);
    report("guest_runs_commands_and_reports_their_status", &run);
    assert_eq!(run.exit_status, Some(7), "exit status:\n{run}");
    assert!(!run.timed_out, "{run}");
    run.assert_line("ok proc")
        .assert_line("ok sysfs")
        .assert_line("ok module")
        .assert_line("FAIL no ivshmem device (1af4:1110, class 0500xx)")
        .assert_line("probe exited 1");
    let assets = vm::Assets::get();
    let kernel = run.value("kernel ").expect("uname -r printed");
    assert!(
        assets.version.contains(kernel),
        "the guest runs kernel {kernel}, the cache holds {}",
        assets.version
    );
}

/// `ivshmem-plain` over a host file: the guest finds the device by the
/// sysfs scan, BAR0 is the 256 bytes of registers, BAR2 is the file, the
/// host's pattern reads back in the guest, and the guest's writes reach the
/// file.
#[test]
fn ivshmem_plain_bar2_is_the_host_file() {
    let Some(qemu) = vm::qemu("ivshmem_plain_bar2_is_the_host_file") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let mem_path = dir.path().join("shm");
    let shm = std::fs::File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&mem_path)
        .expect("create the shared file");
    shm.set_len(SHM_SIZE).expect("size the shared file");
    let seed = seed();
    let data = write_challenge(&shm, seed);
    let spec = GuestSpec {
        files: vec![(probe(dir.path()), PROBE.into())],
        init_commands: vec![PROBE.into()],
        devices: vec![Device::IvshmemPlain {
            mem_path: mem_path.clone(),
            size: SHM_SIZE,
        }],
        ..GuestSpec::default()
    };
    let run = Guest::boot(&qemu, &spec);
    report("ivshmem_plain_bar2_is_the_host_file", &run);
    run.assert_success()
        .assert_line("ok magic")
        .assert_line(&format!("ok pattern {} bytes", data.len()))
        .assert_line("ok answer");
    assert_eq!(
        run.value("bar0 "),
        Some(REGISTERS_SIZE.to_string().as_str())
    );
    // No MSI-X table without a server.
    assert_eq!(run.value("bar1 "), Some("0"));
    assert_eq!(run.value("bar2 "), Some(SHM_SIZE.to_string().as_str()));
    // Not configured for interrupts: IVPosition reads 0.
    assert_eq!(run.value("ivposition "), Some("0"));
    check_answer(&shm, seed, &data, &run);
}

/// `ivshmem-doorbell` against the test's ivshmem server: QEMU accepts the
/// server's set-up messages, the guest's IVPosition is the id the server
/// gave it, BAR2 is the server's memfd, BAR1 holds the MSI-X table, and a
/// Doorbell write of `(0 << 16) | 1` signals the host peer's eventfd for
/// vector 1 (and only that one). The client's discovery, run by
/// `vgpu status` in the guest, finds the same device.
#[test]
fn ivshmem_doorbell_reaches_the_host_eventfd() {
    let Some(qemu) = vm::qemu("ivshmem_doorbell_reaches_the_host_eventfd") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let server = IvshmemServer::start(&dir.path().join("ivshmem.sock"), SHM_SIZE, 2);
    let seed = seed();
    let data = write_challenge(server.shm(), seed);
    let spec = GuestSpec {
        files: vec![
            (probe(dir.path()), PROBE.into()),
            (env!("CARGO_BIN_EXE_vgpu").into(), VGPU.into()),
        ],
        init_commands: vec![
            format!("{PROBE} doorbell {HOST_PEER} 1"),
            // The client's own discovery (`vgpu status` runs it) finds the
            // device by the sysfs scan; no mediator answers there yet.
            format!("{VGPU} status || true"),
        ],
        devices: vec![Device::IvshmemDoorbell {
            socket: server.socket().to_owned(),
            vectors: 2,
        }],
        ..GuestSpec::default()
    };
    let run = Guest::boot(&qemu, &spec);
    // The guest has powered off after its Doorbell write; the eventfd
    // keeps the count.
    let rang = server.wait_doorbell(1, Duration::from_secs(1));
    report("ivshmem_doorbell_reaches_the_host_eventfd", &run);
    run.assert_success()
        .assert_line("ok magic")
        .assert_line("ok answer")
        .assert_line(&format!("ok doorbell peer {HOST_PEER} vector 1"));
    assert_eq!(rang, Some(1), "the host's vector-1 eventfd:\n{run}");
    assert_eq!(
        server.wait_doorbell(0, Duration::ZERO),
        None,
        "vector 0 was never rung"
    );
    assert_eq!(server.guest_ids(), vec![1], "one guest, given id 1");
    assert_eq!(run.value("ivposition "), Some("1"));
    assert_eq!(
        run.value("bar0 "),
        Some(REGISTERS_SIZE.to_string().as_str())
    );
    assert_ne!(run.value("bar1 "), Some("0"), "no MSI-X BAR:\n{run}");
    assert_eq!(run.value("bar2 "), Some(SHM_SIZE.to_string().as_str()));
    check_answer(server.shm(), seed, &data, &run);
    let bdf = run.value("ok found ").expect("the probe found the device");
    assert_eq!(
        run.value("mediator address"),
        Some(format!("pci:{bdf} (vGPU PCI device found under /sys/bus/pci/devices)").as_str()),
        "vgpu status in the guest:\n{run}"
    );
}

/// Where the client lands in the guest: glibc's default search path, so
/// `dlopen("libcuda.so.1")` finds it with no `LD_LIBRARY_PATH`.
const GUEST_LIBCUDA: &str = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";
const SMOKE: &str = "/opt/vgpu-test/driver_smoke";
const GUEST_LIBNVML: &str = "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1";
const NVML_INFO: &str = "/opt/vgpu-test/nvml_info";

/// Waits until `path` exists (the mediator's ivshmem socket: QEMU connects
/// to it at start-up and fails when nobody listens).
#[track_caller]
fn wait_path(path: &Path, mediator: &common::Mediator) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !path.exists() {
        assert!(
            common::is_alive(mediator.pid()),
            "the mediator exited before creating {}; log:\n{}",
            path.display(),
            mediator.log_text()
        );
        assert!(
            std::time::Instant::now() < deadline,
            "the mediator did not create {} within 10 s; log:\n{}",
            path.display(),
            mediator.log_text()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The guest that runs `driver_smoke` over ivshmem: the client as
/// `libcuda.so.1`, the program, the mediator's doorbell device, and no
/// `VGPU_MEDIATOR` (the client finds the device by its sysfs scan).
/// `SMOKE` in `commands` stands for the program's path in the guest.
fn smoke_guest(build: &common::Build, dir: &Path, socket: &Path, commands: &[&str]) -> GuestSpec {
    let smoke = vm::compile_c(&vm::repo_root().join("tests/c/driver_smoke.c"), dir);
    // The guest's environment is the kernel's: no VGPU_* variable at all.
    let init_commands = commands.iter().map(|c| c.replace("SMOKE", SMOKE)).collect();
    GuestSpec {
        files: vec![
            (build.client.clone(), GUEST_LIBCUDA.into()),
            (smoke, SMOKE.into()),
        ],
        init_commands,
        devices: vec![Device::IvshmemDoorbell {
            socket: socket.to_owned(),
            vectors: 4,
        }],
        cpus: 2,
        ..GuestSpec::default()
    }
}

/// The lines every `driver_smoke` run prints when it passes.
const SMOKE_LINES: [&str; 7] = [
    "ok load libcuda.so.1",
    "ok init",
    "ok memcpy_round_trip",
    "ok memcpy_htod_beyond_allocation",
    "ok stream_ordered_result",
    "ok launch_result",
    "ok mem_alloc_without_context",
];

/// The ivshmem transport end to end in a real guest: the
/// mediator serves the simulated device on `--listen ivshmem:PATH`; in the
/// guest, `driver_smoke` finds the device by the sysfs scan (no
/// `VGPU_MEDIATOR`), then one run alone and two at once pass every check,
/// and `tests/c/nvml_info.c` with vgpu's NVML as `libnvidia-ml.so.1`;
/// QEMU is then killed mid-run, the workers of its sessions exit, and the
/// next guest is served as well.
#[test]
fn driver_smoke_in_a_guest_over_ivshmem() {
    let Some(qemu) = vm::qemu("driver_smoke_in_a_guest_over_ivshmem") else {
        return;
    };
    let build = common::build();
    let dir = tempfile::tempdir().expect("temp dir");
    let socket = dir.path().join("ivshmem.sock");
    let listen = format!("ivshmem:{}", socket.display());
    let mediator = common::Mediator::start_with(&build, &["--listen", &listen]);
    wait_path(&socket, &mediator);

    // `vgpu doctor` and `vgpu install` in the guest; then one process,
    // then two at once, each run's lines prefixed with its name.
    let mut spec = smoke_guest(
        &build,
        dir.path(),
        &socket,
        &[
            "VGPU doctor | sed 's/^/doctor: /'",
            "VGPU install --lib /opt/vgpu-test/libvgpu-cuda.so --root /tmp/image \
                | sed 's/^/install: /'",
            "ls /tmp/image/usr/lib/vgpu | sed 's/^/installed: /'",
            "SMOKE | sed 's/^/alone: /'",
            "NVML_INFO processes | sed 's/^/nvml: /'",
            "SMOKE > /tmp/a.log 2>&1 & a=$!",
            "SMOKE > /tmp/b.log 2>&1 & b=$!",
            "wait $a && echo 'first: exit 0' || echo 'first: failed'",
            "wait $b && echo 'second: exit 0' || echo 'second: failed'",
            "sed 's/^/first: /' /tmp/a.log",
            "sed 's/^/second: /' /tmp/b.log",
        ],
    );
    for c in &mut spec.init_commands {
        *c = c
            .replace("VGPU ", &format!("{VGPU} "))
            .replace("NVML_INFO", NVML_INFO);
    }
    let nvml_info = vm::compile_c(&vm::repo_root().join("tests/c/nvml_info.c"), dir.path());
    spec.files.push((nvml_info, NVML_INFO.into()));
    spec.files.push((build.nvml.clone(), GUEST_LIBNVML.into()));
    spec.files
        .push((env!("CARGO_BIN_EXE_vgpu").into(), VGPU.into()));
    spec.files.push((
        build.client.clone(),
        "/opt/vgpu-test/libvgpu-cuda.so".into(),
    ));
    let run = Guest::boot(&qemu, &spec);
    report("driver_smoke_in_a_guest_over_ivshmem", &run);
    run.assert_success()
        .assert_line("first: exit 0")
        .assert_line("second: exit 0")
        .assert_line("installed: libvgpu-cuda.so")
        // NVML through the guest's device, beside the CUDA client.
        .assert_line("nvml: ok load libnvidia-ml.so.1")
        .assert_line("nvml: ok name_matches")
        .assert_line("nvml: ok memory_counts_allocation")
        .assert_line("nvml: ok process_listed_with_allocation")
        .assert_line("nvml: 22 checks, 0 failed");
    for needle in [
        "doctor: ",
        "(shared memory), peer id 1",
        "host to guest by polling with backoff",
        "answered the handshake",
    ] {
        assert!(
            run.serial_output
                .lines()
                .any(|l| l.starts_with("doctor: ") && l.contains(needle)),
            "vgpu doctor in the guest lacks {needle:?}:\n{run}"
        );
    }
    for who in ["alone", "first", "second"] {
        for line in SMOKE_LINES {
            run.assert_line(&format!("{who}: {line}"));
        }
        assert!(
            run.serial_output
                .lines()
                .any(|l| l.starts_with(&format!("{who}: ")) && l.ends_with(" checks, 0 failed")),
            "no passing summary from {who}:\n{run}"
        );
        assert!(
            !run.serial_output.contains(&format!("{who}: FAIL")),
            "{who} failed a check:\n{run}\n--- mediator log ---\n{}",
            mediator.log_text()
        );
    }

    // A guest killed while a session is open (the program runs again and
    // again, so QEMU dies in the middle of one)...
    let spec = smoke_guest(&build, dir.path(), &socket, &["while SMOKE; do :; done"]);
    let mut guest = Guest::start(&qemu, &spec);
    guest.wait_for("ok init", spec.timeout);
    let workers = mediator.worker_pids();
    assert!(
        !workers.is_empty(),
        "the mediator logged no worker for the guest's sessions:\n{}",
        mediator.log_text()
    );
    guest.kill();
    // ...frees everything: its workers exit...
    for pid in workers {
        assert!(
            common::wait_gone(pid, Duration::from_secs(10)),
            "worker {pid} outlived the killed guest; log:\n{}",
            mediator.log_text()
        );
    }
    // ...and the next guest is served.
    let spec = smoke_guest(&build, dir.path(), &socket, &["SMOKE"]);
    let run = Guest::boot(&qemu, &spec);
    run.assert_success();
    for line in SMOKE_LINES {
        run.assert_line(line);
    }
}

/// A killed QEMU closes its server connection, which is how the server
/// learns that a guest is gone; the next QEMU that connects gets a new id
/// and works as the first did.
#[test]
fn ivshmem_server_sees_a_killed_guest_and_serves_the_next() {
    let test = "ivshmem_server_sees_a_killed_guest_and_serves_the_next";
    let Some(qemu) = vm::qemu(test) else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let server = IvshmemServer::start(&dir.path().join("ivshmem.sock"), SHM_SIZE, 2);
    let device = Device::IvshmemDoorbell {
        socket: server.socket().to_owned(),
        vectors: 2,
    };
    let first = GuestSpec {
        init_commands: vec!["sleep 600".into()],
        devices: vec![device.clone()],
        ..GuestSpec::default()
    };
    let mut guest = Guest::start(&qemu, &first);
    guest.wait_for(vm::READY, first.timeout);
    guest.kill();
    assert!(
        server.wait_gone(1, Duration::from_secs(10)),
        "the server's connection to the killed guest is still open"
    );

    let seed = seed();
    let data = write_challenge(server.shm(), seed);
    let next = GuestSpec {
        files: vec![(probe(dir.path()), PROBE.into())],
        init_commands: vec![format!("{PROBE} doorbell {HOST_PEER} 0")],
        devices: vec![device],
        ..GuestSpec::default()
    };
    let run = Guest::boot(&qemu, &next);
    report(test, &run);
    run.assert_success()
        .assert_line("ok doorbell peer 0 vector 0");
    assert_eq!(server.guest_ids(), vec![1, 2]);
    assert_eq!(run.value("ivposition "), Some("2"));
    assert_eq!(
        server.wait_doorbell(0, Duration::from_secs(1)),
        Some(1),
        "the next guest's doorbell:\n{run}"
    );
    check_answer(server.shm(), seed, &data, &run);
}

/// Where the VFIO wake-up program lands in the guest.
const WAKE: &str = "/opt/vgpu-test/vfio_wake";
/// Doorbell round trips the guest times.
const PINGS: u32 = 200;

/// Host → guest wake-ups with no driver of vgpu's own in the guest:
/// `ivshmem-doorbell` interrupts only through MSI-X (it has no INTx, so
/// `uio_pci_generic` cannot serve it, and Debian's kernels lack VFIO's
/// no-IOMMU mode), so the guest gets a virtual IOMMU with interrupt
/// remapping, binds the device to `vfio-pci`, sets Bus Master Enable (an
/// MSI-X message is a device write) and receives each vector as an
/// eventfd. The host rings vector 2 and only vector 2 fires; then the
/// guest times doorbell round trips (it rings the host's vector 0, the
/// host answers on the guest's vector 0).
#[test]
fn ivshmem_doorbell_interrupts_reach_guest_user_space_through_vfio() {
    let test = "ivshmem_doorbell_interrupts_reach_guest_user_space_through_vfio";
    let Some(qemu) = vm::qemu(test) else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let server = IvshmemServer::start(&dir.path().join("ivshmem.sock"), SHM_SIZE, 4);
    let wake = vm::compile_c(&vm::repo_root().join("tests/vm/vfio_wake.c"), dir.path());
    let modules = [
        "vfio",
        "vfio_iommu_type1",
        "vfio_virqfd",
        "irqbypass",
        "vfio-pci-core",
        "vfio-pci",
    ];
    let spec = GuestSpec {
        files: vec![(wake, WAKE.into())],
        modules: modules.iter().map(|m| (*m).to_owned()).collect(),
        init_commands: vec![
            "echo 1af4 1110 > /sys/bus/pci/drivers/vfio-pci/new_id".into(),
            "for d in /sys/bus/pci/devices/*; do \
             if [ $(cat $d/vendor) = 0x1af4 ] && [ $(cat $d/device) = 0x1110 ]; then bdf=${d##*/}; fi; \
             done"
                .into(),
            "group=$(basename $(readlink /sys/bus/pci/devices/$bdf/iommu_group))".into(),
            "echo driver $(basename $(readlink /sys/bus/pci/devices/$bdf/driver))".into(),
            format!("{WAKE} $bdf $group {PINGS}"),
        ],
        // Interrupt remapping keeps vfio_iommu_type1 from refusing the
        // device (else it wants allow_unsafe_interrupts); under KVM it
        // needs the split irqchip.
        qemu_extra_args: [
            "-machine",
            "q35,kernel-irqchip=split",
            "-device",
            "intel-iommu,intremap=on",
        ]
            .iter()
            .map(Into::into)
            .collect(),
        devices: vec![Device::IvshmemDoorbell {
            socket: server.socket().to_owned(),
            vectors: 4,
        }],
        ..GuestSpec::default()
    };
    let mut guest = Guest::start(&qemu, &spec);
    guest.wait_for("waiting for an interrupt", spec.timeout);
    let guest_id = server.guest_ids()[0];
    server.ring_guest(guest_id, 2);
    // Answer every ping; a missing one ends the loop (the guest then
    // fails and says so).
    let mut answered = 0;
    while answered < PINGS {
        let Some(n) = server.wait_doorbell(0, Duration::from_secs(30)) else {
            break;
        };
        for _ in 0..n {
            server.ring_guest(guest_id, 0);
        }
        answered += u32::try_from(n).expect("a count of pings");
    }
    let run = guest.finish();
    report(test, &run);
    run.assert_success()
        .assert_line("driver vfio-pci")
        .assert_line("msix vectors 4")
        .assert_line("ok interrupt vector 2");
    assert_eq!(answered, PINGS, "pings the host answered:\n{run}");
    let rtt = run.value("roundtrip_us ").expect("a round-trip figure");
    eprintln!("{test}: {:?} doorbell round trip {rtt} µs", run.accel);
}

/// The figures of `tests/vm/guest_bench.c` (posted launches, a waited
/// round trip, 64 MiB copies) in a guest over `--listen ivshmem:` and on
/// this host over the local rings, both against the simulated device.
/// A benchmark, not a check: `scripts/vm-bench` runs it (in release mode)
/// and prints the two sets side by side.
#[test]
#[ignore = "a benchmark: run by scripts/vm-bench"]
fn guest_bench_beside_local_rings() {
    let Some(qemu) = vm::qemu("guest_bench_beside_local_rings") else {
        return;
    };
    let build = common::build();
    let dir = tempfile::tempdir().expect("temp dir");
    let bench = vm::compile_c(&vm::repo_root().join("tests/vm/guest_bench.c"), dir.path());

    let socket = dir.path().join("ivshmem.sock");
    let listen = format!("ivshmem:{}", socket.display());
    let mediator = common::Mediator::start_with(&build, &["--listen", &listen]);
    wait_path(&socket, &mediator);
    let spec = GuestSpec {
        files: vec![
            (build.client.clone(), GUEST_LIBCUDA.into()),
            (bench.clone(), "/opt/vgpu-test/guest_bench".into()),
        ],
        init_commands: vec!["/opt/vgpu-test/guest_bench".into()],
        devices: vec![Device::IvshmemDoorbell {
            socket: socket.clone(),
            vectors: 4,
        }],
        cpus: 2,
        ..GuestSpec::default()
    };
    let run = Guest::boot(&qemu, &spec);
    run.assert_success().assert_line("bench ok");

    let h = common::Harness::start();
    let host = h.run(h.command(&bench));
    host.assert_success().assert_line("bench ok");

    println!(
        "guest ({:?}) over ivshmem | host over local rings",
        run.accel
    );
    for key in ["posted", "rtt", "htod", "dtoh"] {
        let guest = run.value(&format!("{key} ")).unwrap_or_default();
        let local = host
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key} ")))
            .unwrap_or_default();
        println!("{key:<7} {guest:<16} | {local}");
    }
}
