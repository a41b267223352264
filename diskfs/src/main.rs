//! The `gauntlet-diskfs` command: `run` (the daemon), the fault clients and
//! `bench`. Its contract with the harness is in `docs/nemesis.md`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use gauntlet_diskfs::daemon::{self, RunOptions};
use gauntlet_diskfs::{
    bench, client, DiskfsError, Reply, Request, DEFAULT_SOCKET, EXIT_FAILED, FAILED_PREFIX,
};

const USAGE: &str = "usage:
  gauntlet-diskfs run --backing DIR --mount DIR [--socket PATH] [--container] -- CMD [ARGS...]
  gauntlet-diskfs status     [--socket PATH]
  gauntlet-diskfs crash      [--socket PATH]
  gauntlet-diskfs power-loss [--torn] [--seed N] [--socket PATH]
  gauntlet-diskfs corrupt    (--bitflip N | --truncate) --files GLOB[,GLOB...] [--seed N] [--socket PATH]
  gauntlet-diskfs wipe       [--socket PATH]
  gauntlet-diskfs bench      --dir DIR [--mb N]";

/// The flags of one subcommand, read by hand.
struct Flags {
    args: Vec<OsString>,
    pos: usize,
    cmd: &'static str,
}

impl Flags {
    fn next(&mut self) -> Option<String> {
        let a = self.args.get(self.pos)?.to_string_lossy().into_owned();
        self.pos += 1;
        Some(a)
    }

    fn value(&mut self, flag: &str) -> Result<OsString, DiskfsError> {
        let v = self
            .args
            .get(self.pos)
            .cloned()
            .ok_or_else(|| DiskfsError::Usage(format!("{}: {flag} needs a value", self.cmd)))?;
        self.pos += 1;
        Ok(v)
    }

    fn number(&mut self, flag: &str) -> Result<u64, DiskfsError> {
        let v = self.value(flag)?;
        v.to_string_lossy().parse().map_err(|_| {
            DiskfsError::Usage(format!(
                "{}: {flag} takes a whole number, not {:?}",
                self.cmd,
                v.to_string_lossy()
            ))
        })
    }

    fn unknown(&self, flag: &str) -> DiskfsError {
        DiskfsError::Usage(format!("{}: unknown argument {flag:?}\n{USAGE}", self.cmd))
    }
}

enum Cmd {
    Run(RunOptions),
    Client(PathBuf, Request),
    Bench(PathBuf, u64),
}

fn parse(args: Vec<OsString>) -> Result<Cmd, DiskfsError> {
    let Some(sub) = args.first().map(|s| s.to_string_lossy().into_owned()) else {
        return Err(DiskfsError::Usage(USAGE.into()));
    };
    let cmd: &'static str = match sub.as_str() {
        "run" => "run",
        "status" => "status",
        "crash" => "crash",
        "power-loss" => "power-loss",
        "corrupt" => "corrupt",
        "wipe" => "wipe",
        "bench" => "bench",
        "-h" | "--help" | "help" => return Err(DiskfsError::Usage(USAGE.into())),
        other => {
            return Err(DiskfsError::Usage(format!(
                "unknown command {other:?}\n{USAGE}"
            )))
        }
    };
    let mut f = Flags { args, pos: 1, cmd };
    let mut socket = PathBuf::from(DEFAULT_SOCKET);
    let (mut backing, mut mount, mut dir) = (None, None, None);
    let (mut container, mut torn, mut truncate) = (false, false, false);
    let (mut seed, mut bitflip, mut mb) = (None, None, 64u64);
    let mut files: Option<Vec<String>> = None;
    let mut rest = Vec::new();
    while let Some(a) = f.next() {
        match (cmd, a.as_str()) {
            (_, "--socket") if cmd != "bench" => socket = f.value("--socket")?.into(),
            ("run", "--backing") => backing = Some(PathBuf::from(f.value("--backing")?)),
            ("run", "--mount") => mount = Some(PathBuf::from(f.value("--mount")?)),
            ("run", "--container") => container = true,
            ("run", "--") => {
                rest = f.args[f.pos..].to_vec();
                break;
            }
            ("power-loss", "--torn") => torn = true,
            ("power-loss" | "corrupt", "--seed") => seed = Some(f.number("--seed")?),
            ("corrupt", "--bitflip") => bitflip = Some(f.number("--bitflip")?),
            ("corrupt", "--truncate") => truncate = true,
            ("corrupt", "--files") => {
                let v = f.value("--files")?.to_string_lossy().into_owned();
                let globs: Vec<String> = v
                    .split(',')
                    .filter(|g| !g.is_empty())
                    .map(str::to_string)
                    .collect();
                if globs.is_empty() {
                    return Err(DiskfsError::Usage("corrupt: --files names no glob".into()));
                }
                files = Some(globs);
            }
            ("bench", "--dir") => dir = Some(PathBuf::from(f.value("--dir")?)),
            ("bench", "--mb") => mb = f.number("--mb")?,
            _ => return Err(f.unknown(&a)),
        }
    }
    let need = |v: Option<PathBuf>, flag: &str| {
        v.ok_or_else(|| DiskfsError::Usage(format!("{cmd}: {flag} is required\n{USAGE}")))
    };
    Ok(match cmd {
        "run" => Cmd::Run(RunOptions {
            backing: need(backing, "--backing")?,
            mount: need(mount, "--mount")?,
            socket,
            container,
            cmd: if rest.is_empty() {
                return Err(DiskfsError::Usage(format!(
                    "run: no command after --\n{USAGE}"
                )));
            } else {
                rest
            },
        }),
        "bench" => Cmd::Bench(need(dir, "--dir")?, mb),
        "status" => Cmd::Client(socket, Request::Status),
        "crash" => Cmd::Client(socket, Request::Crash),
        "wipe" => Cmd::Client(socket, Request::Wipe),
        "power-loss" => {
            if seed.is_some() && !torn {
                return Err(DiskfsError::Usage(
                    "power-loss: --seed only goes with --torn".into(),
                ));
            }
            Cmd::Client(socket, Request::PowerLoss { torn, seed })
        }
        _ => {
            let files = files.ok_or_else(|| {
                DiskfsError::Usage(format!("corrupt: --files is required\n{USAGE}"))
            })?;
            match (bitflip, truncate) {
                (Some(bits), false) => {
                    Cmd::Client(socket, Request::CorruptBitflip { bits, files, seed })
                }
                (None, true) => Cmd::Client(socket, Request::CorruptTruncate { files, seed }),
                _ => {
                    return Err(DiskfsError::Usage(
                        "corrupt: give exactly one of --bitflip N and --truncate".into(),
                    ))
                }
            }
        }
    })
}

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let cmd = match parse(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("gauntlet-diskfs: {e}");
            return ExitCode::from(2);
        }
    };
    match cmd {
        Cmd::Run(opts) => {
            daemon::install_panic_hook();
            match daemon::run(opts) {
                Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
                Err(e @ DiskfsError::NotContainer(_)) | Err(e @ DiskfsError::Usage(_)) => {
                    eprintln!("gauntlet-diskfs: {e}");
                    ExitCode::from(2)
                }
                Err(e) => {
                    eprintln!("{FAILED_PREFIX}{e}");
                    ExitCode::from(EXIT_FAILED as u8)
                }
            }
        }
        Cmd::Client(socket, req) => match client::request(&socket, &req) {
            Ok(Reply::Status(s)) => print_json(&s),
            Ok(Reply::Report(r)) => print_json(&r),
            Ok(Reply::Error(e)) | Err(DiskfsError::Refused(e)) => {
                eprintln!("gauntlet-diskfs: the daemon refused: {e}");
                ExitCode::from(1)
            }
            Err(e) => {
                eprintln!("gauntlet-diskfs: {e}");
                ExitCode::from(1)
            }
        },
        Cmd::Bench(dir, mb) => match bench::bench(&dir, mb) {
            Ok(r) => {
                println!(
                    "direct:  {:8.1} MiB/s {:8.0} fsyncs/s ({} MiB in {:.2} s)",
                    r.direct.mib_per_s,
                    r.direct.fsyncs_per_s,
                    r.mib,
                    r.direct.elapsed.as_secs_f64()
                );
                println!(
                    "mounted: {:8.1} MiB/s {:8.0} fsyncs/s ({} MiB in {:.2} s)",
                    r.mounted.mib_per_s,
                    r.mounted.fsyncs_per_s,
                    r.mib,
                    r.mounted.elapsed.as_secs_f64()
                );
                println!(
                    "direct, no fsync: {:8.1} MiB/s ({} MiB in {:.2} s)",
                    r.direct_nosync.mib_per_s,
                    r.mib,
                    r.direct_nosync.elapsed.as_secs_f64()
                );
                println!("ratio (mounted/direct): {:.3}", r.ratio());
                println!(
                    "ratio (mounted/direct without fsync): {:.3}",
                    r.mounted.mib_per_s / r.direct_nosync.mib_per_s
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("gauntlet-diskfs: bench: {e}");
                ExitCode::from(1)
            }
        },
    }
}

fn print_json<T: serde::Serialize>(v: &T) -> ExitCode {
    match serde_json::to_string(v) {
        Ok(s) => {
            println!("{s}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gauntlet-diskfs: printing the reply: {e}");
            ExitCode::from(1)
        }
    }
}
