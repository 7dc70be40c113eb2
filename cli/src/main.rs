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

#[derive(Parser)]
#[command(name = "polylock", version, about = "Distributed locks and IDs from the command line")]
struct Cli {
    /// Backend URL; default $POLYLOCK_URL, else sqlite://polylock.db
    #[arg(long, global = true, value_name = "URL")]
    url: Option<String>,

    /// Log polylock's events to stderr: -v info, -vv debug, -vvv trace (default: off, or $POLYLOCK_LOG)
    #[arg(short = 'v', long = "verbose", global = true, action = clap::ArgAction::Count)]
    verbose: u8,

    /// Log level instead of -v: off, error, warn, info, debug or trace
    #[arg(long, global = true, value_name = "LEVEL", value_parser = logging::level_arg)]
    log_level: Option<tracing::level_filters::LevelFilter>,

    /// How log lines look: text, or json (one object per line)
    #[arg(long, global = true, value_name = "FORMAT", value_enum, default_value_t)]
    log_format: logging::LogFormat,

    /// Serve Prometheus metrics on http://ADDR/metrics while the command runs
    #[arg(long, global = true, value_name = "ADDR")]
    metrics_listen: Option<std::net::SocketAddr>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a command while holding a lock (a distributed flock)
    Run(run::RunArgs),
    /// Run a command only while leading an election, or watch who leads
    Elect(elect::ElectArgs),
    /// Make or take apart IDs
    #[command(subcommand)]
    Id(ids::IdCommand),
    /// Worker processes contend for one lock and count under it; checks the result
    Demo(demo::DemoArgs),
    /// Who holds a lock, its fencing token, remaining lease and waiters
    Status(admin::StatusArgs),
    /// Break a lock whoever holds it (Redisson's forceUnlock): dangerous, asks first
    Unlock(admin::UnlockArgs),
    /// The locks that exist, where the backend can enumerate them
    List(admin::ListArgs),
    /// Serve this process's lock metrics in Prometheus' text format on GET /metrics
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
