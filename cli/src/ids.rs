//! `polylock id`: snowflake IDs, UUIDv7 and ULIDs from the shell.

use std::io::{BufWriter, Write};

use clap::Subcommand;
use polylock::id::{
    format_ulid, format_uuid, parse_ulid, parse_uuid, ulid_timestamp_ms, ulid_to_uuid, uuid7_timestamp_ms,
    uuid_to_ulid, Snowflake, SnowflakeLayout, UlidGenerator, Uuid7Generator,
};

use crate::exit;

#[derive(Subcommand)]
pub enum IdCommand {
    /// Print snowflake IDs (Twitter layout), one a line
    Snowflake {
        /// Worker id, 0..=1023 (default 0; with --lease, the lowest free one)
        #[arg(long)]
        worker: Option<u64>,
        /// Lease the worker id from the backend (--url): exclusive while this runs, and no
        /// ID repeats an earlier holder's; the id is printed on stderr
        #[arg(long)]
        lease: bool,
        /// How many IDs to print
        #[arg(long, default_value_t = 1)]
        count: u64,
        /// Epoch in Unix milliseconds (default: Twitter's)
        #[arg(long, value_name = "MS")]
        epoch: Option<u64>,
    },
    /// Print segment IDs of a tag (Leaf's leaf_alloc on SQL and SQLite), one a line: never
    /// 0, never one any process handed out before
    Segment {
        /// The tag (Leaf's biz_tag)
        #[arg(long)]
        tag: String,
        /// How many IDs to print
        #[arg(long, default_value_t = 1)]
        count: u64,
        /// The first and smallest range reserved at once (Leaf's step)
        #[arg(long, default_value_t = 1000)]
        step: u64,
    },
    /// Print UUIDv7s (RFC 9562, increasing even if the clock steps back), one a line
    Uuid7 {
        /// How many to print
        #[arg(long, default_value_t = 1)]
        count: u64,
    },
    /// Print ULIDs (monotonic: increasing, as numbers and as text), one a line
    Ulid {
        /// How many to print
        #[arg(long, default_value_t = 1)]
        count: u64,
    },
    /// Print the parts of an ID: a snowflake's time, worker and sequence; a UUIDv7's or a
    /// ULID's time, and the same 128 bits in the other form
    Parse {
        /// A snowflake ID (decimal), a UUIDv7 or a ULID
        id: String,
        /// Epoch in Unix milliseconds (default: Twitter's)
        #[arg(long, value_name = "MS")]
        epoch: Option<u64>,
    },
}

fn layout(epoch: Option<u64>) -> polylock::Result<SnowflakeLayout> {
    match epoch {
        None => Ok(SnowflakeLayout::TWITTER),
        Some(epoch) => Ok(SnowflakeLayout::new(epoch, 41, 10, 12)?),
    }
}

/// Print `count` lines made by `next`; stop quietly if the reader goes away (`| head`).
fn print_each(count: u64, mut next: impl FnMut() -> polylock::Result<String>) -> u8 {
    let mut out = BufWriter::new(std::io::stdout().lock());
    for _ in 0..count {
        match next() {
            Ok(line) => {
                if writeln!(out, "{line}").is_err() {
                    return 0;
                }
            }
            Err(err) => return exit::fail(&err),
        }
    }
    let _ = out.flush();
    0
}

pub async fn id(url: &str, command: IdCommand) -> u8 {
    match command {
        IdCommand::Uuid7 { count } => {
            let generator = Uuid7Generator::new();
            print_each(count, || Ok(format_uuid(generator.next()?)))
        }
        IdCommand::Ulid { count } => {
            let generator = UlidGenerator::new();
            print_each(count, || Ok(format_ulid(generator.next()?)))
        }
        IdCommand::Segment { tag, count, step } => segment(url, &tag, count, step).await,
        IdCommand::Snowflake { worker, lease: true, count, epoch } => leased_snowflake(url, worker, count, epoch).await,
        IdCommand::Snowflake { worker, lease: false, count, epoch } => {
            let worker = worker.unwrap_or(0);
            let generator = match layout(epoch).and_then(|layout| Ok(Snowflake::with_layout(layout, worker)?)) {
                Ok(generator) => generator,
                Err(err) => return exit::fail(&err),
            };
            print_each(count, || Ok(generator.next_id()?.to_string()))
        }
        IdCommand::Parse { id, epoch } => match parse(id.trim(), epoch) {
            Ok(lines) => {
                print!("{lines}");
                0
            }
            Err(err) => exit::fail(&err),
        },
    }
}

/// The parts of `id`, by its form: a decimal snowflake (of `epoch`'s layout), a UUIDv7
/// (`8-4-4-4-12` hex) or a ULID (26 characters of Crockford base32), as `label: value` lines.
fn parse(id: &str, epoch: Option<u64>) -> polylock::Result<String> {
    let when = |ms: u64| format!("{ms} ({})", rfc3339_millis(ms));
    if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) {
        let number: u64 = id
            .parse()
            .map_err(|_| polylock::Error::invalid_argument(format!("'{id}' is larger than a 64-bit snowflake ID")))?;
        let parts = layout(epoch)?.parse(number)?;
        return Ok(format!(
            "id:        {number}\ntimestamp: {}\nworker:    {}\nsequence:  {}\n",
            when(parts.timestamp_ms),
            parts.worker,
            parts.sequence
        ));
    }
    if epoch.is_some() {
        return Err(polylock::Error::invalid_argument("--epoch applies to snowflake IDs only"));
    }
    match id.len() {
        26 => {
            let ulid = parse_ulid(id)?;
            Ok(format!(
                "ulid:      {}\ntimestamp: {}\nas uuid:   {}\n",
                format_ulid(ulid),
                when(ulid_timestamp_ms(ulid)),
                format_uuid(ulid_to_uuid(ulid))
            ))
        }
        32 | 36 => {
            let uuid = parse_uuid(id)?;
            let timestamp = uuid7_timestamp_ms(uuid)?;
            Ok(format!(
                "uuid7:     {}\ntimestamp: {}\nas ulid:   {}\n",
                format_uuid(uuid),
                when(timestamp),
                format_ulid(uuid_to_ulid(uuid))
            ))
        }
        _ => Err(polylock::Error::invalid_argument(format!(
            "'{id}' is not an ID: expected a snowflake (a decimal number), a UUIDv7 (8-4-4-4-12 hex) \
             or a ULID (26 characters)"
        ))),
    }
}

/// Print `count` IDs made by `next`, a batch at a time; stop quietly if the reader goes away.
async fn print_batches<F, Fut>(count: u64, mut next: F) -> polylock::Result<()>
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = polylock::Result<Vec<u64>>>,
{
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut left = count;
    while left > 0 {
        let batch = left.min(1000) as usize;
        for id in next(batch).await? {
            if writeln!(out, "{id}").is_err() {
                return Ok(());
            }
        }
        left -= batch as u64;
        // Let the watchdog and the background loads run on this one-thread runtime.
        tokio::task::yield_now().await;
    }
    let _ = out.flush();
    Ok(())
}

async fn segment(url: &str, tag: &str, count: u64, step: u64) -> u8 {
    let run = async {
        let client = polylock::Client::connect(url).await?;
        let options = polylock::SegmentOptions { step, ..Default::default() };
        let generator = client.segments(tag, options)?;
        let printed = print_batches(count, |n| {
            let generator = generator.clone();
            async move { generator.next_ids(n).await }
        })
        .await;
        client.close().await;
        printed
    };
    match run.await {
        Ok(()) => 0,
        Err(err) => exit::fail(&err),
    }
}

async fn leased_snowflake(url: &str, worker: Option<u64>, count: u64, epoch: Option<u64>) -> u8 {
    let run = async {
        let layout = layout(epoch)?;
        let client = polylock::Client::connect(url).await?;
        let options = polylock::SnowflakeOptions { layout, ..Default::default() };
        let generator = client.snowflake(worker, options).await?;
        let worker = generator.worker_id().await.unwrap_or_default();
        eprintln!("worker id {worker} (epoch {})", generator.epoch().await.unwrap_or_default());
        let printed = print_batches(count, |n| {
            let generator = generator.clone();
            async move { generator.next_ids(n).await }
        })
        .await;
        let closed = generator.close().await;
        client.close().await;
        printed.and(closed)
    };
    match run.await {
        Ok(()) => 0,
        Err(err) => exit::fail(&err),
    }
}

/// `2024-05-01T12:00:00.123Z` for Unix milliseconds (proleptic Gregorian, UTC).
fn rfc3339_millis(unix_ms: u64) -> String {
    let days = (unix_ms / 86_400_000) as i64;
    let ms_of_day = unix_ms % 86_400_000;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        ms_of_day / 3_600_000,
        ms_of_day / 60_000 % 60,
        ms_of_day / 1000 % 60,
        ms_of_day % 1000
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_known_instants() {
        assert_eq!(super::rfc3339_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(super::rfc3339_millis(1_288_834_974_657), "2010-11-04T01:42:54.657Z");
        assert_eq!(super::rfc3339_millis(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
