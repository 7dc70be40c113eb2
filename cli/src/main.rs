//! `polylock`: a distributed `flock(1)`, snowflake IDs, and a demo of the embedded default.

mod admin;
mod demo;
mod elect;
mod exit;
mod ids;
mod logging;
mod run;
mod serve_metrics;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The heading of the flags every subcommand takes, so each subcommand's own come first.
const GLOBAL: &str = "Global options";

#[derive(Parser)]
#[command(name = "polylock", version, about = "Distributed locks and IDs from the command line")]
struct Cli {
    /// Backend URL; default $POLYLOCK_URL, else sqlite://polylock.db
    #[arg(long, global = true, value_name = "URL", help_heading = GLOBAL)]
    url: Option<String>,

    /// Log polylock's events to stderr: -v info, -vv debug, -vvv trace (default: off, or $POLYLOCK_LOG)
    #[arg(short = 'v', long = "verbose", global = true, action = clap::ArgAction::Count, help_heading = GLOBAL)]
    verbose: u8,

    /// Log level instead of -v: off, error, warn, info, debug or trace
    #[arg(long, global = true, value_name = "LEVEL", value_parser = logging::level_arg, help_heading = GLOBAL)]
    log_level: Option<tracing::level_filters::LevelFilter>,

    /// How log lines look: text, or json (one object per line)
    #[arg(long, global = true, value_name = "FORMAT", value_enum, default_value_t, help_heading = GLOBAL)]
    log_format: logging::LogFormat,

    /// Serve Prometheus metrics on http://ADDR/metrics while the command runs
    #[arg(long, global = true, value_name = "ADDR", help_heading = GLOBAL)]
    metrics_listen: Option<std::net::SocketAddr>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a command while holding a lock (a distributed flock)
    #[command(
        after_help = "Examples:\n  polylock run --lock nightly-report --wait 30s -- ./report.sh\n  polylock --url redis://127.0.0.1:6379 run --lock deploy --lease 5m -- make deploy\n  polylock run --semaphore encoders --permits 4 -- ffmpeg -i in.mov out.mp4\n  polylock run --lock doc --shared -- cat doc.txt"
    )]
    Run(run::RunArgs),
    /// Run a command only while leading an election, or watch who leads
    #[command(
        after_help = "Examples:\n  polylock elect --name scheduler --value \"$(hostname)\" -- ./scheduler\n  polylock elect --name scheduler --observe"
    )]
    Elect(elect::ElectArgs),
    /// Make or take apart IDs
    #[command(
        subcommand,
        after_help = "Examples:\n  polylock id snowflake --worker 7 --count 3\n  polylock id snowflake --lease --count 1000\n  polylock id segment --tag orders --count 10\n  polylock id uuid7\n  polylock id parse 1541815603606036480\n  polylock id parse 01J9Z3K2V8Q4M6T0R5X7Y1N2P3"
    )]
    Id(ids::IdCommand),
    /// Worker processes contend for one lock and count under it; checks the result
    #[command(after_help = "Examples:\n  polylock demo\n  polylock --url redis://127.0.0.1:6379 demo")]
    Demo(demo::DemoArgs),
    /// Who holds a lock, its fencing token, remaining lease and waiters
    #[command(
        after_help = "Examples:\n  polylock status nightly-report\n  polylock --url redis://127.0.0.1:6379 status deploy --json"
    )]
    Status(admin::StatusArgs),
    /// Break a lock whoever holds it (Redisson's forceUnlock): dangerous, asks first
    #[command(
        after_help = "Examples:\n  polylock unlock --force nightly-report\n  polylock unlock --force deploy --yes"
    )]
    Unlock(admin::UnlockArgs),
    /// The locks that exist, where the backend can enumerate them
    #[command(after_help = "Examples:\n  polylock list\n  polylock list --prefix orders: --json")]
    List(admin::ListArgs),
    /// Serve this process's lock metrics in Prometheus' text format on GET /metrics
    #[command(after_help = "Examples:\n  polylock serve-metrics --listen 127.0.0.1:9464")]
    ServeMetrics(serve_metrics::ServeMetricsArgs),
    /// One worker process of `polylock demo` (started by it)
    #[command(hide = true)]
    DemoWorker(demo::WorkerArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return if err.use_stderr() { ExitCode::from(exit::USAGE) } else { ExitCode::SUCCESS };
        }
    };
    logging::init(logging::level(cli.verbose, cli.log_level), cli.log_format);
    let url = cli.url.unwrap_or_else(polylock::url::default_url);
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("polylock: cannot start the async runtime: {err}");
            return ExitCode::from(exit::SOFTWARE);
        }
    };
    let code = runtime.block_on(async {
        if let Some(addr) = cli.metrics_listen {
            match serve_metrics::bind(addr).await {
                Ok(listener) => drop(tokio::spawn(serve_metrics::serve(listener))),
                Err(code) => return code,
            }
        }
        match cli.command {
            Command::Run(args) => run::run(&url, args).await,
            Command::Elect(args) => elect::elect(&url, args).await,
            Command::Id(command) => ids::id(&url, command).await,
            Command::Demo(args) => demo::demo(&url, args).await,
            Command::DemoWorker(args) => demo::worker(&url, args).await,
            Command::Status(args) => admin::status(&url, args).await,
            Command::Unlock(args) => admin::unlock(&url, args).await,
            Command::List(args) => admin::list(&url, args).await,
            Command::ServeMetrics(args) => serve_metrics::serve_metrics(&url, args).await,
        }
    });
    // Not a plain drop, which waits for every task still on the blocking pool: cut off from
    // the server (a partition), a connection's last I/O can keep one there for many seconds
    // after the client closed, and the command has ended already.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    tracing::debug!(op = "exit", code, "runtime stopped");
    ExitCode::from(code)
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::Cli;

    /// The words of one example line, as a shell splits them (double quotes only).
    fn words(line: &str) -> Vec<String> {
        let (mut out, mut word, mut quoted) = (Vec::new(), String::new(), false);
        for c in line.chars() {
            match c {
                '"' => quoted = !quoted,
                c if c.is_whitespace() && !quoted => {
                    if !word.is_empty() {
                        out.push(std::mem::take(&mut word));
                    }
                }
                c => word.push(c),
            }
        }
        if !word.is_empty() {
            out.push(word);
        }
        out
    }

    /// Every example a subcommand's help shows parses as that subcommand's arguments.
    #[test]
    fn every_help_example_parses() {
        let command = Cli::command();
        let mut seen = 0;
        for sub in command.get_subcommands() {
            let Some(help) = sub.get_after_help() else { continue };
            let help = help.to_string();
            let examples = help.strip_prefix("Examples:\n").expect("after_help starts with Examples:");
            for line in examples.lines() {
                let argv = words(line.trim());
                assert_eq!(argv[0], "polylock", "{line}");
                assert!(argv.contains(&sub.get_name().to_string()), "{line} is an example of {}", sub.get_name());
                if let Err(err) = Cli::try_parse_from(&argv) {
                    panic!("the example `{line}` of `polylock {}` does not parse: {err}", sub.get_name());
                }
                seen += 1;
            }
        }
        assert!(seen >= 10, "{seen} examples");
    }
}
