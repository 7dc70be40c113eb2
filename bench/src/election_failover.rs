//! Election fail-over time per backend (issue #18): a leader process is killed (SIGKILL: no
//! resign, no close, its connections cut by the kernel) while a second process campaigns for
//! the same election; the figure is the time from the kill to the second process acting as
//! leader (its `campaign` returned). What bounds it is printed beside it: the session TTL on
//! etcd (`?ttl=`), the session timeout on ZooKeeper (`?session_timeout=`), the leadership's
//! lease elsewhere (`?lease=`), all set to the same [`BOUND`], so the ratio fail-over/bound
//! says how much of that bound each backend spends. Both candidates are child processes of
//! this bench (the hidden `election-candidate` subcommand), so the kill is a real process's.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::Result;

/// The hidden subcommand a candidate process runs.
pub const CANDIDATE_COMMAND: &str = "election-candidate";

/// The session TTL, session timeout or lease every backend is given.
const BOUND: Duration = Duration::from_secs(2);

/// How long a measurement may take before it is reported as failed.
const PATIENCE: Duration = Duration::from_secs(60);

/// One backend: its name and the URL its candidates connect to, with the bound set.
struct Target {
    backend: &'static str,
    url: String,
    bound_name: &'static str,
}

fn env_or(var: &str, default: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| default.to_string())
}

fn with_option(url: &str, option: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{option}")
}

fn targets(dir: &std::path::Path) -> Vec<Target> {
    let bound_ms = BOUND.as_millis();
    let lease = |backend, url: String| Target {
        backend,
        url: with_option(&url, &format!("lease={bound_ms}ms")),
        bound_name: "lease",
    };
    vec![
        lease("sqlite", format!("sqlite://{}/election.db", dir.display())),
        lease("redis", env_or("POLYLOCK_TEST_REDIS_URL", "redis://127.0.0.1:16379")),
        lease(
            "postgres",
            env_or("POLYLOCK_TEST_POSTGRES_URL", "postgres://polylock:polylock@127.0.0.1:15432/polylock"),
        ),
        lease("mysql", env_or("POLYLOCK_TEST_MARIADB_URL", "mysql://polylock:polylock@127.0.0.1:13306/polylock")),
        Target {
            backend: "etcd",
            url: with_option(&env_or("POLYLOCK_TEST_ETCD_URL", "etcd://127.0.0.1:12379"), &format!("ttl={bound_ms}ms")),
            bound_name: "session ttl",
        },
        Target {
            backend: "zookeeper",
            url: with_option(
                &env_or("POLYLOCK_TEST_ZOOKEEPER_URL", "zk://127.0.0.1:12181"),
                &format!("session_timeout={bound_ms}ms"),
            ),
            bound_name: "session timeout",
        },
    ]
}

/// A candidate process and its stdout lines.
struct Candidate {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Candidate {
    fn start(url: &str, name: &str, value: &str) -> Result<Candidate> {
        let mut child = Command::new(std::env::current_exe()?)
            .args([CANDIDATE_COMMAND, url, name, value])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdout: ChildStdout = child.stdout.take().ok_or("no stdout")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(std::result::Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Ok(Candidate { child, lines })
    }

    /// The next line that starts with `word`; an error on anything else (the child says why on
    /// stderr) or after [`PATIENCE`].
    fn expect(&self, word: &str) -> Result<String> {
        let line = self
            .lines
            .recv_timeout(PATIENCE)
            .map_err(|_| format!("an election candidate did not say {word} within {PATIENCE:?}"))?;
        if line.starts_with(word) {
            Ok(line)
        } else {
            Err(format!("an election candidate said '{line}', not {word}").into())
        }
    }
}

impl Drop for Candidate {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn term_of(line: &str) -> u64 {
    line.split_whitespace().nth(1).and_then(|t| t.parse().ok()).unwrap_or(0)
}

/// One fail-over: A leads, B stands, A is killed; the time until B leads.
fn one_failover(target: &Target, round: usize) -> Result<Duration> {
    let name = format!("bench-failover-{}-{round}-{}", std::process::id(), unix_nanos());
    let mut first = Candidate::start(&target.url, &name, "first")?;
    first.expect("CAMPAIGNING")?;
    let first_term = term_of(&first.expect("LEADER")?);
    let second = Candidate::start(&target.url, &name, "second")?;
    second.expect("CAMPAIGNING")?;
    // The campaign call is under way; give it time to stand in the store.
    std::thread::sleep(Duration::from_millis(500));
    let killed_at = Instant::now();
    first.child.kill()?; // SIGKILL
    let line = second.expect("LEADER")?;
    let failover = killed_at.elapsed();
    let _ = first.child.wait();
    let second_term = term_of(&line);
    if second_term <= first_term {
        return Err(format!("{}: the new leader's term {second_term} is not above {first_term}", target.backend).into());
    }
    Ok(failover)
}

fn unix_nanos() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
}

/// The election section: `rounds` fail-overs per backend; a backend whose server does not
/// answer is reported as skipped, and any other failure ends the run with an error.
pub fn run(rounds: usize) -> Result<()> {
    println!();
    println!("## election fail-over: leader process SIGKILLed -> the waiting process leads");
    println!(
        "# {rounds} round(s) per backend; every backend's bound (session TTL, session timeout or lease) is {} ms",
        BOUND.as_millis()
    );
    println!("{:<10} {:>16} {:>12} {:>16} {:>10}", "backend", "bound", "bound ms", "fail-over ms", "/bound");
    let dir = tempfile::tempdir()?;
    let probe = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    for target in targets(dir.path()) {
        let reachable = probe.block_on(async {
            let client = polylock::Client::connect(&target.url).await?;
            client.close().await;
            Ok::<_, polylock::Error>(())
        });
        if let Err(err) = reachable {
            println!("{:<10} skipped: {err}", target.backend);
            continue;
        }
        let mut times = Vec::new();
        for round in 0..rounds {
            times.push(one_failover(&target, round)?);
        }
        times.sort();
        let median = times[times.len() / 2];
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let all: Vec<String> = times.iter().map(|t| format!("{:.0}", ms(*t))).collect();
        println!(
            "{:<10} {:>16} {:>12.0} {:>16} {:>9.2}x   (median {:.0} ms)",
            target.backend,
            target.bound_name,
            ms(BOUND),
            all.join("/"),
            ms(median) / ms(BOUND),
            ms(median)
        );
    }
    Ok(())
}

/// The hidden `election-candidate URL NAME VALUE` subcommand: connect, say "CAMPAIGNING",
/// campaign, say "LEADER <term>", and lead until killed (or stdin closes).
pub fn candidate_main(args: &[String]) -> Result<()> {
    let [url, name, value] = args else {
        return Err(format!("usage: {CANDIDATE_COMMAND} URL NAME VALUE").into());
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    runtime.block_on(async {
        let client = polylock::Client::connect(url).await?;
        let election = client.election(name)?;
        println!("CAMPAIGNING");
        let leadership = election.campaign(value.as_bytes(), None).await?;
        println!("LEADER {}", leadership.term());
        // Lead until the parent kills us; stdin closing (the parent gone) ends it too.
        tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            let _ = std::io::stdin().read_line(&mut line);
        })
        .await?;
        leadership.resign().await?;
        client.close().await;
        Ok(())
    })
}
