//! Command-line parsing of `vgpu bench`.

use std::path::PathBuf;

use clap::Parser;
use vgpu_cli::args::{Cli, Command, DriverChoice};
use vgpu_cli::bench::BenchArgs;

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(["vgpu", "bench"].into_iter().chain(args.iter().copied()))
}

fn bench(args: &[&str]) -> BenchArgs {
    match parse(args).expect("parses").command {
        Command::Bench(b) => b,
        other => panic!("not bench: {other:?}"),
    }
}

#[test]
fn defaults_measure_everything_on_every_transport() {
    let b = bench(&[]);
    assert!(!b.quick && !b.list);
    assert!(b.only.is_empty());
    assert_eq!(b.driver, DriverChoice::Auto);
    assert_eq!(b.native_driver, DriverChoice::Auto);
    assert_eq!(b.transports, ["rings", "socket", "tcp"]);
    assert_eq!(b.json, None);
    assert_eq!(b.timeout, None);
    assert_eq!(b.python, PathBuf::from("python3"));
    assert_eq!(b.socket_timeout, 10);
    assert_eq!((b.rounds, b.model_rounds), (3, 1));
}

#[test]
fn model_rounds_are_bounded() {
    assert_eq!(bench(&["--model-rounds", "5"]).model_rounds, 5);
    for bad in ["0", "21", "x"] {
        assert!(
            parse(&["--model-rounds", bad]).is_err(),
            "--model-rounds {bad} was taken"
        );
    }
}

#[test]
fn lists_are_comma_separated() {
    let b = bench(&[
        "--quick",
        "--only",
        "launch_sync,memcpy_8b",
        "--only",
        "torch",
        "--transports",
        "socket",
        "--driver",
        "/usr/local/nvidia/lib64/libcuda.so.1",
        "--native-driver",
        "sim",
        "--json",
        "out.json",
        "--timeout",
        "30",
    ]);
    assert!(b.quick);
    assert_eq!(b.only, ["launch_sync", "memcpy_8b", "torch"]);
    assert_eq!(b.transports, ["socket"]);
    assert_eq!(
        b.driver,
        DriverChoice::Path("/usr/local/nvidia/lib64/libcuda.so.1".into())
    );
    assert_eq!(b.native_driver, DriverChoice::Sim);
    assert_eq!(b.json, Some(PathBuf::from("out.json")));
    assert_eq!(b.timeout, Some(30));
}

#[test]
fn bad_values_are_usage_errors() {
    for args in [
        &["--only", "launch_sync,nonsense"][..],
        &["--transports", "rings,"],
        &["--transports", "a b"],
        &["--timeout", "0"],
        &["--native-driver", ""],
        &["--socket-timeout", "0"],
    ] {
        let err = parse(args).expect_err(&format!("{args:?} must be refused"));
        assert_eq!(err.exit_code(), 2, "{args:?}");
    }
    let err = parse(&["--only", "nonsense"]).expect_err("unknown benchmark");
    assert!(err.to_string().contains("launch_sync"), "{err}");
}

#[test]
fn the_subcommand_is_listed_in_help() {
    let err = Cli::try_parse_from(["vgpu", "--help"]).expect_err("help exits");
    assert!(err.to_string().contains("bench"), "{err}");
}
