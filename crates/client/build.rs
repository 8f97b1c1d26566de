//! Gives the cdylib the real driver's SONAME, and keeps it mapped after
//! `dlclose` (CUDA applications may call in from exit handlers).
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcuda.so.1");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
}
