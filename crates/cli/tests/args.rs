//! Command-line parsing of `vgpu`.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Parser;
use vgpu_cli::args::{Cli, Command, DriverChoice};
use vgpu_cli::config::Env;

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("vgpu").chain(args.iter().copied()))
}

#[test]
fn run_takes_everything_after_the_double_dash() {
    let cli = parse(&[
        "run",
        "--mediator",
        "unix:/tmp/m.sock",
        "--",
        "python3",
        "-c",
        "--x",
    ])
    .expect("parses");
    let Command::Run(run) = cli.command else {
        panic!("not run")
    };
    assert_eq!(run.mediator.as_deref(), Some("unix:/tmp/m.sock"));
    let want: Vec<OsString> = ["python3", "-c", "--x"]
        .iter()
        .map(OsString::from)
        .collect();
    assert_eq!(run.command, want);
}

#[test]
fn run_needs_a_command() {
    let err = parse(&["run"]).expect_err("no command");
    assert_eq!(err.exit_code(), 2);
    assert!(parse(&["run", "--"]).is_err());
}

#[test]
fn global_path_flags_work_before_and_after_the_subcommand() {
    let a = parse(&["--lib-dir", "/opt/vgpu/lib", "status"]).expect("parses");
    let b = parse(&["status", "--lib-dir", "/opt/vgpu/lib"]).expect("parses");
    assert_eq!(a.paths, b.paths);
    assert_eq!(a.paths.lib_dir, Some(PathBuf::from("/opt/vgpu/lib")));
    let c = parse(&["doctor", "--mediator-bin", "/x/vgpu-mediator"]).expect("parses");
    assert_eq!(
        c.paths.mediator_bin,
        Some(PathBuf::from("/x/vgpu-mediator"))
    );
}

#[test]
fn demo_driver_choices() {
    let pick = |args: &[&str]| match parse(args).expect("parses").command {
        Command::Demo(d) => d.driver,
        _ => panic!("not demo"),
    };
    assert_eq!(pick(&["demo"]), DriverChoice::Auto);
    assert_eq!(pick(&["demo", "--driver", "sim"]), DriverChoice::Sim);
    assert_eq!(pick(&["demo", "--driver", "auto"]), DriverChoice::Auto);
    assert_eq!(
        pick(&["demo", "--driver", "/usr/lib/libcuda.so.1"]),
        DriverChoice::Path("/usr/lib/libcuda.so.1".into())
    );
    assert!(parse(&["demo", "--driver", ""]).is_err());
}

#[test]
fn demo_numbers_are_bounded() {
    let Command::Demo(d) = parse(&["demo"]).expect("parses").command else {
        panic!("not demo")
    };
    assert_eq!(
        (d.elements, d.socket_timeout, d.run_timeout),
        (1 << 20, 10, 120)
    );
    assert!(parse(&["demo", "--elements", "0"]).is_err());
    assert!(parse(&["demo", "--elements", "67108865"]).is_err());
    assert!(parse(&["demo", "--socket-timeout", "0"]).is_err());
}

#[test]
fn unknown_subcommands_and_flags_are_usage_errors() {
    assert_eq!(
        parse(&["install-everything"])
            .expect_err("unknown")
            .exit_code(),
        2
    );
    assert_eq!(
        parse(&["status", "--bogus"])
            .expect_err("unknown")
            .exit_code(),
        2
    );
    assert!(parse(&[]).is_err());
}

#[test]
fn mediator_address_precedence() {
    let env = Env {
        vgpu_mediator: Some("unix:/from/env".into()),
        ..Env::default()
    };
    assert_eq!(
        env.mediator_address(Some("unix:/from/flag")),
        "unix:/from/flag"
    );
    assert_eq!(env.mediator_address(None), "unix:/from/env");
    assert_eq!(
        Env::default().mediator_address(None),
        "unix:/run/vgpu/mediator.sock"
    );
}

#[test]
fn ld_library_path_gets_the_folder_in_front_once() {
    let dir = PathBuf::from("/opt/vgpu/lib");
    let env = Env {
        ld_library_path: Some("/a:/opt/vgpu/lib:/b".into()),
        ..Env::default()
    };
    assert_eq!(
        env.ld_library_path_with(&dir),
        OsString::from("/opt/vgpu/lib:/a:/b")
    );
    assert_eq!(
        Env::default().ld_library_path_with(&dir),
        OsString::from("/opt/vgpu/lib")
    );
}
