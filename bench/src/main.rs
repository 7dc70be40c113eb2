//! polylock-bench: polylock side by side with what a Rust user would pick instead, printed
//! as figures and ratios. It never judges them: it exits 0 whatever the numbers are, and
//! non-zero only when something fails.
//!
//! ```text
//! polylock-bench [snowflake|sqlite|all] [--quick]
//! ```

mod flock;
mod locks;
mod measure;
mod report;
mod snowflake;
mod sqlite;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use locks::LockBudget;

/// Every error ends the run with a message and a non-zero exit.
pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

const USAGE: &str = "usage: polylock-bench [snowflake|sqlite|all] [--quick]

  snowflake  IDs/s of polylock's Snowflake beside rs-snowflake, against the 4096/ms ceiling
  sqlite     lock+unlock pairs/s of polylock on sqlite:// beside flock(2), in one process
             and across 4 processes
  all        both (the default)
  --quick    about 1 s per section, for a smoke run in CI

Figures and ratios (polylock / peer) from one run; nothing passes or fails.";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sections {
    Snowflake,
    Sqlite,
    All,
}

/// How long each measurement runs.
#[derive(Debug, Clone, Copy)]
struct Budget {
    name: &'static str,
    /// Each of the seven snowflake figures.
    per_id_figure: Duration,
    locks: LockBudget,
}

/// About 40 s in all.
const FULL: Budget = Budget {
    name: "full",
    per_id_figure: Duration::from_secs(2),
    locks: LockBudget {
        in_process: Duration::from_secs(2),
        processes: Duration::from_secs(5),
        process_start: Duration::from_millis(500),
    },
};

/// About 1 s per section.
const QUICK: Budget = Budget {
    name: "quick",
    per_id_figure: Duration::from_millis(130),
    locks: LockBudget {
        in_process: Duration::from_millis(100),
        processes: Duration::from_millis(150),
        process_start: Duration::from_millis(120),
    },
};

enum Invocation {
    Bench { sections: Sections, budget: Budget },
    Worker(Vec<String>),
    Help,
}

fn parse_args(args: Vec<String>) -> std::result::Result<Invocation, String> {
    if args.first().map(String::as_str) == Some(locks::WORKER_COMMAND) {
        return Ok(Invocation::Worker(args[1..].to_vec()));
    }
    let mut sections = None;
    let mut budget = FULL;
    for arg in &args {
        match arg.as_str() {
            "--quick" => budget = QUICK,
            "-h" | "--help" => return Ok(Invocation::Help),
            "snowflake" | "sqlite" | "all" if sections.is_some() => {
                return Err(format!("name one section, not several (got '{arg}' too)"));
            }
            "snowflake" => sections = Some(Sections::Snowflake),
            "sqlite" => sections = Some(Sections::Sqlite),
            "all" => sections = Some(Sections::All),
            other => return Err(format!("unknown argument '{other}'")),
        }
    }
    Ok(Invocation::Bench { sections: sections.unwrap_or(Sections::All), budget })
}

fn run(sections: Sections, budget: Budget) -> Result<()> {
    let cores = std::thread::available_parallelism().map(|n| n.get().to_string()).unwrap_or_else(|_| "unknown".into());
    println!(
        "polylock-bench {}: {} run on {cores} cores (available_parallelism); one-run figures, not averaged; \
         ratios are polylock/peer (above 1x polylock is faster); figures, not pass/fail",
        env!("CARGO_PKG_VERSION"),
        budget.name
    );
    let started = Instant::now();
    if matches!(sections, Sections::Snowflake | Sections::All) {
        snowflake::run(budget.per_id_figure)?;
    }
    if matches!(sections, Sections::Sqlite | Sections::All) {
        locks::run(budget.locks)?;
    }
    println!("# done in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

fn main() -> ExitCode {
    let invocation = match parse_args(std::env::args().skip(1).collect()) {
        Ok(invocation) => invocation,
        Err(message) => {
            eprintln!("polylock-bench: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let result = match invocation {
        Invocation::Help => {
            println!("{USAGE}");
            Ok(())
        }
        Invocation::Worker(args) => locks::worker_main(&args),
        Invocation::Bench { sections, budget } => run(sections, budget),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("polylock-bench: error: {err}");
            ExitCode::FAILURE
        }
    }
}
