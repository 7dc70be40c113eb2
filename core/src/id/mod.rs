//! Distributed ID generators.

mod clock;
mod snowflake;

pub use clock::{Clock, ManualClock, SystemClock};
pub use snowflake::{parse_snowflake, Snowflake, SnowflakeLayout, SnowflakeParts, DEFAULT_MAX_ROLLBACK};
