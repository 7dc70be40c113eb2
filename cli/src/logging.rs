//! `-v`/`--log-level` and `--log-format`: the core's tracing events (connect, acquire,
//! renew, release, lost, reconnect, fail-over) to stderr, as text or as one JSON object per
//! line. Off by default, so stderr carries only the CLI's own messages unless asked.

use clap::ValueEnum;
use tracing::level_filters::LevelFilter;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer as _;

/// How events are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event
    #[default]
    Text,
    /// One JSON object per line, the event's fields at the top level
    Json,
}

/// The level asked for: `--log-level` wins, then `-v` (info), `-vv` (debug), `-vvv` (trace),
/// then `$POLYLOCK_LOG`; otherwise off.
pub fn level(verbose: u8, log_level: Option<LevelFilter>) -> LevelFilter {
    if let Some(level) = log_level {
        return level;
    }
    match verbose {
        0 => std::env::var("POLYLOCK_LOG").ok().and_then(|text| text.parse().ok()).unwrap_or(LevelFilter::OFF),
        1 => LevelFilter::INFO,
        2 => LevelFilter::DEBUG,
        _ => LevelFilter::TRACE,
    }
}

/// `off`, `error`, `warn`, `info`, `debug` or `trace`.
pub fn level_arg(text: &str) -> Result<LevelFilter, String> {
    text.parse().map_err(|_| format!("unknown log level '{text}'; use off, error, warn, info, debug or trace"))
}

/// Route events to stderr: polylock's own at `level`, other libraries' (the backends'
/// clients) only from warnings up, and only once polylock's are on at all.
pub fn init(level: LevelFilter, format: LogFormat) {
    if level == LevelFilter::OFF {
        return;
    }
    let others = if level >= LevelFilter::TRACE { LevelFilter::INFO } else { LevelFilter::WARN.min(level) };
    let filter = Targets::new().with_default(others).with_target("polylock", level);
    let layer = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(false);
    let _ = match format {
        LogFormat::Text => {
            tracing_subscriber::registry().with(layer.fmt_fields(escaped_fields()).with_filter(filter)).try_init()
        }
        LogFormat::Json => tracing_subscriber::registry()
            .with(layer.json().flatten_event(true).with_current_span(false).with_span_list(true).with_filter(filter))
            .try_init(),
    };
}

/// The text format's fields, `key=value` with control characters escaped (strings quoted, as
/// the default does), so a lock name with a newline cannot forge a line of its own.
fn escaped_fields() -> impl for<'w> tracing_subscriber::fmt::FormatFields<'w> + 'static {
    use tracing_subscriber::field::MakeExt;
    tracing_subscriber::fmt::format::debug_fn(|writer, field, value| {
        let text = polylock::kit::log_bridge::escape_controls(&format!("{value:?}"));
        if field.name() == "message" {
            write!(writer, "{text}")
        } else {
            write!(writer, "{field}={text}")
        }
    })
    .delimited(" ")
}
