//! `polylock elect`: take part in a leader election from the shell.
//!
//! - `polylock elect --name NAME [--value V] -- CMD` campaigns with V (default
//!   `<hostname>:<pid>`) and runs CMD only once it leads; CMD sees the term (a fencing token)
//!   in `POLYLOCK_FENCING_TOKEN` and `POLYLOCK_ELECTION_TERM`. If leadership is lost while CMD
//!   runs, CMD is sent SIGTERM, as `polylock run` does for a lost lock (the same loop). When
//!   CMD exits the leader resigns, and polylock exits with CMD's status.
//! - `polylock elect --name NAME --observe` prints the value of each new leader (and each
//!   value a leader proclaims) as a line, until interrupted.

use std::io::Write as _;
use std::time::Duration;

use clap::Args;
use polylock::duration::parse_duration;
use polylock::{Client, Leadership};

use crate::exit;
use crate::run::{run_holding, Held};

#[derive(Args)]
pub struct ElectArgs {
    /// Name of the election
    #[arg(long, value_name = "NAME")]
    name: String,
    /// What this candidate proclaims as leader; default <hostname>:<pid>
    #[arg(long, value_name = "V", conflicts_with = "observe")]
    value: Option<String>,
    /// Print each new leader's value as a line instead of campaigning
    #[arg(long)]
    observe: bool,
    /// Give up (exit 75) if not leading within this long, e.g. 10s; default: forever
    #[arg(long, value_name = "DURATION", conflicts_with = "observe", value_parser = wait_arg)]
    wait: Option<Duration>,
    /// The command to run while leading
    #[arg(last = true, value_name = "CMD", required_unless_present = "observe", conflicts_with = "observe")]
    command: Vec<String>,
}

fn wait_arg(text: &str) -> Result<Duration, String> {
    parse_duration("--wait", text).map_err(|e| e.to_string())
}

pub async fn elect(url: &str, args: ElectArgs) -> u8 {
    let client = match Client::connect(url).await {
        Ok(client) => client,
        Err(err) => return exit::fail(&err),
    };
    let code = if args.observe { observe(&client, &args.name).await } else { lead(&client, args).await };
    client.close().await;
    code
}

async fn lead(client: &Client, args: ElectArgs) -> u8 {
    let value = args.value.unwrap_or_else(default_value);
    let campaign = match client.election(&args.name) {
        Ok(election) => election.campaign(value.as_bytes(), args.wait).await,
        Err(err) => Err(err),
    };
    match campaign {
        Ok(leadership) => {
            let what = format!("leadership of election '{}' (term {})", args.name, leadership.term());
            run_holding(leadership, what, args.command).await
        }
        Err(err) => exit::fail(&err),
    }
}

async fn observe(client: &Client, name: &str) -> u8 {
    let mut changes = match client.election(name).and_then(|election| election.observe()) {
        Ok(changes) => changes,
        Err(err) => return exit::fail(&err),
    };
    let mut out = std::io::stdout().lock();
    while let Some(change) = changes.next().await {
        match change {
            Ok(Some(leader)) => {
                let printed = writeln!(out, "{}", String::from_utf8_lossy(&leader.value)).and_then(|()| out.flush());
                if printed.is_err() {
                    return 0; // the reader went away (a closed pipe): nothing left to do
                }
            }
            Ok(None) => {}
            Err(err) => return exit::fail(&err),
        }
    }
    0
}

/// `<hostname>:<pid>`: tells the processes of one election apart in `--observe`'s output.
fn default_value() -> String {
    let mut name = [0u8; 256];
    // SAFETY: gethostname(2) writes at most `len` bytes into the buffer we own.
    let host = if unsafe { libc::gethostname(name.as_mut_ptr().cast(), name.len()) } == 0 {
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        String::from_utf8_lossy(&name[..end]).into_owned()
    } else {
        "localhost".to_string()
    };
    format!("{host}:{}", std::process::id())
}

impl Held for Leadership {
    fn env(&self) -> Vec<(&'static str, Option<String>)> {
        let term = Some(self.term().to_string());
        vec![("POLYLOCK_FENCING_TOKEN", term.clone()), ("POLYLOCK_ELECTION_TERM", term)]
    }

    async fn lost(&self) -> String {
        self.lost_watch().wait().await.to_string()
    }

    async fn release(self) -> polylock::Result<()> {
        self.resign().await
    }
}
