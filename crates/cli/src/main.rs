//! The `vgpu` binary; everything lives in the `vgpu_cli` library.

fn main() -> std::process::ExitCode {
    vgpu_cli::main()
}
