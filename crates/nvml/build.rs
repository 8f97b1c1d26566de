//! Gives the cdylib NVML's SONAME, and keeps it mapped after `dlclose`
//! (monitoring code may call in from exit handlers).
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libnvidia-ml.so.1");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
}
