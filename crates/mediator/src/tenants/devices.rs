//! A tenant's devices: the `devices` list of its `[[tenant]]` table acts in
//! its workers as a `CUDA_VISIBLE_DEVICES` that the client cannot widen.
//!
//! The client's own `CUDA_VISIBLE_DEVICES` (sent in its hello) is read
//! against the tenant's list, as a container's is against its host's: an
//! index `i` is the tenant's `i`-th device; a UUID (`GPU-…`/`MIG-…`, whole
//! or a unique prefix, any case) must name one of the tenant's devices that
//! the list gives by UUID. As with the driver, the list ends at the first
//! entry that names nothing (or a device named already). The result is
//! what the worker sets before `cuInit`.

use super::file::DeviceRef;

/// The `CUDA_VISIBLE_DEVICES` value a worker of a tenant with `allowed`
/// devices applies, given the client's value `client`.
pub fn compose(allowed: &[DeviceRef], client: Option<&str>) -> String {
    let Some(client) = client else {
        return join(allowed.iter());
    };
    let mut picked: Vec<&DeviceRef> = Vec::new();
    for entry in client.split(',').map(str::trim) {
        let found = if is_uuid(entry) {
            let want = entry.to_ascii_lowercase();
            let mut hits = allowed.iter().filter(|d| match d {
                DeviceRef::Uuid(u) => u.to_ascii_lowercase().starts_with(&want),
                DeviceRef::Index(_) => false,
            });
            match (hits.next(), hits.next()) {
                (Some(d), None) => Some(d),
                _ => None,
            }
        } else {
            entry.parse::<usize>().ok().and_then(|i| allowed.get(i))
        };
        match found {
            Some(d) if !picked.contains(&d) => picked.push(d),
            _ => break,
        }
    }
    join(picked.into_iter())
}

fn is_uuid(entry: &str) -> bool {
    entry.len() > 4
        && (entry[..4].eq_ignore_ascii_case("GPU-") || entry[..4].eq_ignore_ascii_case("MIG-"))
}

fn join<'a>(devices: impl Iterator<Item = &'a DeviceRef>) -> String {
    devices.map(|d| d.to_string()).collect::<Vec<_>>().join(",")
}

/// The `--tenant-devices` argument for a tenant's list, and back.
pub fn to_arg(devices: &[DeviceRef]) -> String {
    join(devices.iter())
}

/// Parses a `--tenant-devices` argument (see [`to_arg`]).
pub fn from_arg(arg: &str) -> Vec<DeviceRef> {
    arg.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|e| match e.parse::<u32>() {
            Ok(i) => DeviceRef::Index(i),
            Err(_) => DeviceRef::Uuid(e.to_owned()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_sees_within_the_tenants_devices() {
        let u = "GPU-76677075-2d73-696d-0000-000000000002";
        let t = [DeviceRef::Index(1), DeviceRef::Uuid(u.into())];
        assert_eq!(compose(&t, None), format!("1,{u}"));
        assert_eq!(compose(&t, Some("0")), "1");
        assert_eq!(compose(&t, Some("1,0")), format!("{u},1"));
        assert_eq!(compose(&t, Some("2")), "", "no third device");
        assert_eq!(compose(&t, Some("0,5,1")), "1", "ends at a bad entry");
        assert_eq!(compose(&t, Some("0,0")), "1", "ends at a repeat");
        assert_eq!(compose(&t, Some(&u.to_uppercase())), u);
        assert_eq!(compose(&t, Some("GPU-7667")), u, "a unique prefix");
        assert_eq!(
            compose(&t, Some("GPU-76677075-2d73-696d-0000-000000000000")),
            ""
        );
        assert_eq!(compose(&t, Some("")), "");
        assert_eq!(from_arg(&to_arg(&t)), t);
        assert!(from_arg("").is_empty());
    }
}
