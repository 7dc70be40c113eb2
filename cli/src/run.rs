//! `polylock run`: run a command while holding a lock, like `flock(1)` across machines:
//! the mutex `--lock NAME`, one side of the read-write lock NAME (`--lock NAME --shared` or
//! `--exclusive`, flock's words), or one of N permits of a semaphore (`--semaphore NAME
//! --permits N`).
//!
//! The lock is renewed while the command runs and released when it exits. The command sees
//! the fencing token in `POLYLOCK_FENCING_TOKEN` (absent on RedLock, which has none). SIGINT and SIGTERM are passed on to it.
//! If the lock is lost while it runs, the command is sent SIGTERM: its critical section is
//! no longer protected.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use clap::Args;
use polylock::duration::parse_duration;
use polylock::spi::HoldKind;
use polylock::{AcquireOptions, Client, Guard, LockKind, RwMode};
use tokio::process::Command;
use tokio::signal::unix::{signal, SignalKind};

use crate::exit;

#[derive(Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["lock", "semaphore"])))]
pub struct RunArgs {
    /// Name of the lock
    #[arg(long, value_name = "NAME")]
    lock: Option<String>,
    /// Take the read side of the read-write lock NAME: many holders at once
    #[arg(long, requires = "lock", conflicts_with_all = ["exclusive", "kind"])]
    shared: bool,
    /// Take the write side of the read-write lock NAME: one holder, no readers
    #[arg(long, requires = "lock", conflicts_with = "kind")]
    exclusive: bool,
    /// Name of a semaphore: hold one of its permits while the command runs
    #[arg(long, value_name = "NAME", requires = "permits", conflicts_with = "kind")]
    semaphore: Option<String>,
    /// How many permits the semaphore has (fixed by its first use)
    #[arg(long, value_name = "N", requires = "semaphore", conflicts_with = "lock", value_parser = clap::value_parser!(u32).range(1..))]
    permits: Option<u32>,
    /// Give up (exit 75) if the lock is not free within this long, e.g. 10s; default: forever
    #[arg(long, value_name = "DURATION", value_parser = duration_arg("--wait"))]
    wait: Option<Duration>,
    /// Hold for at most this long; default: renewed by the watchdog while the command runs
    #[arg(long, value_name = "DURATION", value_parser = duration_arg("--lease"))]
    lease: Option<Duration>,
    /// Kind of lock: reentrant (default), fair, token or lease, as the backend offers
    #[arg(long, value_parser = kind_arg)]
    kind: Option<LockKind>,
    /// The command and its arguments
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

fn duration_arg(what: &'static str) -> impl Fn(&str) -> Result<Duration, String> + Clone {
    move |text| parse_duration(what, text).map_err(|e| e.to_string())
}

fn kind_arg(text: &str) -> Result<LockKind, String> {
    text.parse().map_err(|e: polylock::Error| e.to_string())
}

pub async fn run(url: &str, args: RunArgs) -> u8 {
    let client = match Client::connect(url).await {
        Ok(client) => client,
        Err(err) => return exit::fail(&err),
    };
    let code = run_locked(&client, args).await;
    client.close().await;
    tracing::debug!(op = "exit", code, "client closed");
    code
}

async fn run_locked(client: &Client, args: RunArgs) -> u8 {
    let options = AcquireOptions { wait: args.wait, lease: args.lease };
    let command = args.command;
    let acquired = match (&args.lock, &args.semaphore, args.permits) {
        (Some(name), _, _) if args.shared || args.exclusive => {
            let mode = if args.shared { RwMode::Read } else { RwMode::Write };
            match client.rw_lock(name) {
                Ok(rw) => {
                    let side = if args.shared { rw.read() } else { rw.write() };
                    match side.acquire_with(options).await {
                        Ok(guard) => return run_holding(guard, format!("{mode} lock '{name}'"), command).await,
                        Err(err) => err,
                    }
                }
                Err(err) => err,
            }
        }
        (Some(name), _, _) => match client.lock(name).and_then(|lock| match args.kind {
            Some(kind) => lock.with_kind(kind),
            None => Ok(lock), // the backend's default kind (RedLock's token lock)
        }) {
            Ok(lock) => match lock.acquire_with(options).await {
                Ok(guard) => return run_holding(guard, format!("lock '{name}'"), command).await,
                Err(err) => err,
            },
            Err(err) => err,
        },
        (None, Some(name), Some(permits)) => match client.semaphore(name, permits) {
            Ok(semaphore) => match semaphore.acquire_with(options).await {
                Ok(permit) => return run_holding(permit, format!("a permit of semaphore '{name}'"), command).await,
                Err(err) => err,
            },
            Err(err) => err,
        },
        _ => unreachable!("clap requires --lock, or --semaphore with --permits"),
    };
    exit::fail(&acquired)
}

/// What a command runs under: a lock's guard here, a leadership in `polylock elect`. One
/// supervision loop serves both: signals passed on, SIGTERM when the hold is lost, the hold
/// given back when the command exits.
pub(crate) trait Held {
    /// Variables for the command's environment; `None` removes one.
    fn env(&self) -> Vec<(&'static str, Option<String>)>;
    /// Resolves when the hold is lost, with why.
    async fn lost(&self) -> String;
    async fn release(self) -> polylock::Result<()>;
}

impl<K: HoldKind> Held for Guard<K> {
    fn env(&self) -> Vec<(&'static str, Option<String>)> {
        // RedLock has no fencing token: the variable is then absent, never a number that looks like one.
        vec![("POLYLOCK_FENCING_TOKEN", self.fencing_token_opt().map(|token| token.to_string()))]
    }

    async fn lost(&self) -> String {
        Guard::lost(self).await.to_string()
    }

    async fn release(self) -> polylock::Result<()> {
        Guard::release(self).await
    }
}

/// Run the command while `guard` holds; `what` names the hold in messages.
pub(crate) async fn run_holding<H: Held>(guard: H, what: String, command: Vec<String>) -> u8 {
    let (program, program_args) = command.split_first().expect("clap requires a command");
    let mut to_run = Command::new(program);
    to_run.args(program_args);
    for (name, value) in guard.env() {
        match value {
            Some(value) => to_run.env(name, value),
            None => to_run.env_remove(name),
        };
    }
    // Listening before the spawn: a SIGINT or SIGTERM that came between the spawn and the
    // handlers would have killed polylock and left the command running, its lock held to
    // the end of the lease. A signal polylock was started with ignored (a background job of
    // a script, nohup) stays ignored, for polylock and the command alike: the command then
    // inherits it ignored, as it would without polylock in between.
    let listen = |sig: libc::c_int, kind: SignalKind| -> std::io::Result<Option<tokio::signal::unix::Signal>> {
        if ignored_at_start(sig) {
            Ok(None)
        } else {
            signal(kind).map(Some)
        }
    };
    let (mut interrupts, mut terminations) =
        match (listen(libc::SIGINT, SignalKind::interrupt()), listen(libc::SIGTERM, SignalKind::terminate())) {
            (Ok(i), Ok(t)) => (i, t),
            (Err(err), _) | (_, Err(err)) => {
                eprintln!("polylock: cannot install signal handlers: {err}");
                let _ = guard.release().await;
                return exit::SOFTWARE;
            }
        };
    let mut child = match to_run.spawn() {
        Ok(child) => child,
        Err(err) => {
            eprintln!("polylock: cannot run '{program}': {err}");
            let _ = guard.release().await;
            return match err.kind() {
                std::io::ErrorKind::NotFound => exit::NOT_FOUND,
                _ => exit::CANNOT_EXECUTE,
            };
        }
    };
    let pid = child.id().map(|pid| pid as libc::pid_t);
    let send = |sig: libc::c_int| {
        if let Some(pid) = pid {
            // SAFETY: kill(2) with a pid we spawned and have not reaped yet.
            unsafe { libc::kill(pid, sig) };
        }
    };
    let mut lost_reported = false;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            Some(()) = next(&mut interrupts) => send(libc::SIGINT),
            Some(()) = next(&mut terminations) => send(libc::SIGTERM),
            reason = guard.lost(), if !lost_reported => {
                lost_reported = true;
                eprintln!("polylock: lost {what} while the command ran: {reason}; sending it SIGTERM");
                send(libc::SIGTERM);
            }
        }
    };
    if let Err(err) = guard.release().await {
        if !lost_reported {
            eprintln!("polylock: {err}");
        }
    }
    match status {
        Ok(status) => match (status.code(), status.signal()) {
            (Some(code), _) => code as u8,
            (None, Some(sig)) => 128u8.saturating_add(sig as u8),
            (None, None) => exit::SOFTWARE,
        },
        Err(err) => {
            eprintln!("polylock: lost track of the command: {err}");
            exit::SOFTWARE
        }
    }
}

/// Whether `sig` was ignored when polylock started (it has installed no handler for it yet).
fn ignored_at_start(sig: libc::c_int) -> bool {
    // SAFETY: sigaction(2) with a null new action only reads the current one into `old`.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

/// The next delivery of a signal polylock listens for; never, for one it does not.
async fn next(signal: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
    match signal {
        Some(signal) => signal.recv().await,
        None => std::future::pending().await,
    }
}
