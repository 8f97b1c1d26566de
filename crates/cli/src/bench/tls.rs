//! The `tls` transport of `vgpu bench`: the private mediator also listens on
//! `tls://127.0.0.1:PORT`, with a throwaway CA, server certificate and
//! client certificate made for this run by the `openssl` command in the
//! run's private folder; the client authenticates by its certificate
//! (mTLS), as a remote client would.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Stdio};

/// The `--transports` name of a loopback TLS connection to the mediator.
pub const TLS: &str = "tls";

/// What the mediator and the clients of a `tls` run need.
#[derive(Debug)]
pub struct TlsRun {
    /// `tls://127.0.0.1:PORT`.
    pub address: String,
    /// Flags for the mediator: the listener, certificate, key and client CA.
    pub mediator_args: Vec<OsString>,
    /// Environment of the clients: the address, CA and client certificate.
    pub client_env: Vec<(String, OsString)>,
}

/// Runs `openssl ARGS` in `dir`; an error says what failed.
fn openssl(dir: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("the openssl command makes the run's certificates: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "openssl {} failed: {}",
            args.first().copied().unwrap_or_default(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// Makes a CA and a certificate it signs: `NAME.pem`, `NAME.key`.
fn leaf(dir: &Path, name: &str, cn: &str, ext: &str) -> Result<(), String> {
    let ext_file = format!("{name}.ext");
    std::fs::write(dir.join(&ext_file), ext).map_err(|e| format!("{ext_file}: {e}"))?;
    let (key, csr, pem) = (
        format!("{name}.key"),
        format!("{name}.csr"),
        format!("{name}.pem"),
    );
    let subject = format!("/CN={cn}");
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &csr,
            "-subj",
            &subject,
        ],
    )?;
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            &ext_file,
            "-out",
            &pem,
        ],
    )
}

/// Prepares a `tls` run in the private folder `dir`, on loopback `port`.
pub fn prepare(dir: &Path, port: u16) -> Result<TlsRun, String> {
    let dir = dir.join("tls");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    openssl(
        &dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-subj",
            "/CN=vgpu bench CA",
            "-days",
            "2",
        ],
    )?;
    leaf(
        &dir,
        "server",
        "localhost",
        "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n",
    )?;
    leaf(
        &dir,
        "client",
        "vgpu-bench",
        "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n",
    )?;
    let file = |name: &str| dir.join(name).into_os_string();
    let address = format!("tls://127.0.0.1:{port}");
    Ok(TlsRun {
        mediator_args: vec![
            "--listen".into(),
            address.clone().into(),
            "--tls-cert".into(),
            file("server.pem"),
            "--tls-key".into(),
            file("server.key"),
            "--tls-client-ca".into(),
            file("ca.pem"),
        ],
        client_env: vec![
            ("VGPU_MEDIATOR".into(), address.clone().into()),
            ("VGPU_TLS_CA".into(), file("ca.pem")),
            ("VGPU_TLS_CERT".into(), file("client.pem")),
            ("VGPU_TLS_KEY".into(), file("client.key")),
            ("VGPU_TRANSPORT".into(), "auto".into()),
        ],
        address,
    })
}
