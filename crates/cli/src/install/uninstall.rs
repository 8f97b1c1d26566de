//! `vgpu uninstall`: put back, from the manifest, everything install changed.
//!
//! Every path is checked first. A path that still holds what install put
//! there is restored; one that already holds what stood there before is
//! left alone (so an interrupted uninstall can simply run again); anything
//! else was changed by someone since the install, and the whole uninstall is
//! refused, listing those paths, unless `--force` says to restore anyway.
//! Backups are checked against their recorded digests before any path is
//! touched. Then the loader cache is rebuilt, and the backups, the manifest
//! and the folders install created are removed.

use std::fs;
use std::io;
use std::path::Path;

use super::manifest::{self, Derived, Manifest};
use super::node::{self, Node};
use super::rooted::Root;
use super::{is_root, run_ldconfig, Lock, Steps};
use crate::args::UninstallArgs;
use crate::error::CliError;

/// What to do with one recorded path.
enum Plan {
    /// It holds what install put there: put back what stood before.
    Restore,
    /// It already holds what stood there before.
    AlreadyRestored,
    /// Someone changed it since the install; it now holds this.
    Changed(Node),
}

fn io_at(what: &str, p: &Path) -> impl FnOnce(io::Error) -> CliError {
    CliError::io(format!("{what} {}", p.display()))
}

/// Checks that the backup of `previous` still has the recorded contents.
fn check_backup(root: &Root, path: &Path, previous: &Node) -> Result<(), CliError> {
    let Node::File(f) = previous else {
        return Ok(());
    };
    let damaged = |why: String| {
        CliError::Refused(format!(
            "the backup of {} is damaged ({why}); nothing was changed. Restore {} by hand from \
             the package that provides it, then delete {}",
            path.display(),
            path.display(),
            manifest::MANIFEST
        ))
    };
    let Some(b) = &f.backup else {
        return Err(damaged("no backup path recorded".into()));
    };
    match node::digest_file(&root.host(b)) {
        Ok(d) if d == f.digest => Ok(()),
        Ok(_) => Err(damaged(format!("{} has different contents", b.display()))),
        Err(e) => Err(damaged(format!("{}: {e}", b.display()))),
    }
}

/// `vgpu uninstall`.
pub fn uninstall(args: &UninstallArgs) -> Result<(), CliError> {
    let root = Root::new(&args.root).map_err(CliError::io("--root"))?;
    let steps = Steps { dry: args.dry_run };
    let manifest_at = root.host(Path::new(manifest::MANIFEST));
    let Some(m) = Manifest::load(&manifest_at).map_err(io_at("reading", &manifest_at))? else {
        println!(
            "vgpu uninstall: nothing to do: vgpu is not installed under {} (no {})",
            root.dir().display(),
            manifest::MANIFEST
        );
        return Ok(());
    };
    if root.is_system() && !is_root() && !args.dry_run {
        return Err(CliError::Refused(
            "uninstalling from / changes system folders and needs root: run `sudo vgpu uninstall`"
                .into(),
        ));
    }
    println!(
        "vgpu uninstall{}: root {} (installed by vgpu {})",
        if args.dry_run {
            " (dry run: nothing is changed)"
        } else {
            ""
        },
        root.dir().display(),
        m.vgpu_version
    );
    let _lock = if args.dry_run {
        None
    } else {
        Some(Lock::take(&root.host(Path::new(manifest::STATE_DIR)))?)
    };

    let mut plans = Vec::new();
    let mut changed = Vec::new();
    for e in m.entries.iter().rev() {
        let now = node::capture(&root.host(&e.path)).map_err(io_at("reading", &e.path))?;
        let plan = if now.same_as(&e.installed) {
            Plan::Restore
        } else if now.same_as(&e.previous) {
            Plan::AlreadyRestored
        } else {
            changed.push(format!(
                "{}: vgpu installed {}, now it is {}",
                e.path.display(),
                e.installed.describe(),
                now.describe()
            ));
            Plan::Changed(now)
        };
        if !matches!(plan, Plan::AlreadyRestored) {
            check_backup(&root, &e.path, &e.previous)?;
        }
        plans.push((e, plan));
    }
    if !changed.is_empty() {
        if !args.force {
            for c in &changed {
                steps.say("changed", c);
            }
            return Err(CliError::Refused(format!(
                "{} path(s) changed since vgpu was installed, so restoring them could undo someone \
                 else's work; nothing was changed. Look at them, then run `vgpu uninstall --force` \
                 to put back what stood there before vgpu anyway (a plain `ldconfig` run, e.g. by \
                 a driver update, can re-point libcuda.so.1 links)",
                changed.len()
            )));
        }
        steps.say(
            "note",
            format!(
                "--force: restoring {} changed path(s) anyway",
                changed.len()
            ),
        );
    }

    let mut notes = Vec::new();
    for (e, plan) in &plans {
        if let Plan::AlreadyRestored = plan {
            steps.say(
                "unchanged",
                format!("{} (already {})", e.path.display(), e.previous.describe()),
            );
            continue;
        }
        if let Plan::Changed(now) = plan {
            steps.say(
                "note",
                format!("{} is {}; replacing it", e.path.display(), now.describe()),
            );
        }
        match &e.previous {
            Node::Absent => steps.say("remove", e.path.display()),
            other => steps.say(
                "restore",
                format!("{} ({})", e.path.display(), other.describe()),
            ),
        }
        if !steps.dry {
            let backup = match &e.previous {
                Node::File(f) => f.backup.as_deref().map(|b| root.host(b)),
                _ => None,
            };
            let note = node::restore(&root.host(&e.path), &e.previous, backup.as_deref())
                .map_err(io_at("restoring", &e.path))?;
            notes.extend(note);
        }
    }
    for n in notes {
        steps.say("warning", n);
    }
    run_ldconfig(&root, &steps)?;
    for d in &m.derived {
        settle_derived(&root, d, &steps)?;
    }
    remove_state(&root, &m, &steps)?;
    println!(
        "{}",
        if steps.dry {
            "dry run: nothing was changed"
        } else {
            "vgpu is uninstalled: every path is back as it was before `vgpu install`"
        }
    );
    Ok(())
}

/// After the cache is rebuilt: removes a file `ldconfig` made where there
/// was none before vgpu, or says whether it matches the one before.
fn settle_derived(root: &Root, d: &Derived, steps: &Steps) -> Result<(), CliError> {
    let host = root.host(&d.path);
    if d.previous == Node::Absent {
        if fs::symlink_metadata(&host).is_ok() {
            steps.say(
                "remove",
                format!("{} (there was none before vgpu)", d.path.display()),
            );
            if !steps.dry {
                node::remove(&host).map_err(io_at("removing", &d.path))?;
            }
        }
        return Ok(());
    }
    if steps.dry {
        return Ok(());
    }
    let now = node::capture(&host).map_err(io_at("reading", &d.path))?;
    if now.same_as(&d.previous) {
        steps.say(
            "checked",
            format!("{} is as it was before vgpu", d.path.display()),
        );
    } else if d.path.ends_with("aux-cache") {
        steps.say(
            "note",
            format!(
                "{} rebuilt: it is ldconfig's record of the files it scanned, which changes \
                 whenever files come and go",
                d.path.display()
            ),
        );
    } else {
        steps.say(
            "note",
            format!(
                "{} was rebuilt for the files now on disk; it differs from the copy before vgpu, \
                 which was already out of date (or is a cache of ldconfig's own)",
                d.path.display()
            ),
        );
    }
    Ok(())
}

/// Removes the backups, the manifest and the folders install created.
fn remove_state(root: &Root, m: &Manifest, steps: &Steps) -> Result<(), CliError> {
    for e in &m.entries {
        if e.previous != Node::Absent {
            let b = manifest::backup_path(&e.path);
            steps.say("remove", format!("{} (backup)", b.display()));
            if !steps.dry {
                node::remove(&root.host(&b)).map_err(io_at("removing", &b))?;
            }
        }
    }
    steps.say("remove", manifest::MANIFEST);
    if !steps.dry {
        node::remove(&root.host(Path::new(manifest::MANIFEST)))
            .map_err(io_at("removing", Path::new(manifest::MANIFEST)))?;
    }
    for d in m.created_dirs.iter().rev() {
        if steps.dry {
            steps.say("rmdir", d.display());
            continue;
        }
        match fs::remove_dir(root.host(d)) {
            Ok(()) => steps.say("rmdir", d.display()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) if e.kind() == io::ErrorKind::DirectoryNotEmpty => steps.say(
                "note",
                format!(
                    "{} kept: something else was put in it since the install",
                    d.display()
                ),
            ),
            Err(e) => return Err(io_at("removing", d)(e)),
        }
    }
    Ok(())
}
