//! The shared test vectors (test/vectors.tsv) checked against `polylock-id` itself, natively:
//! the JavaScript suites check the same file against the WebAssembly build, so the two agree
//! with each other and with the independently computed expectations.

use polylock_id::sql_names::{lease_name, mysql_lock_name, postgres_advisory_key};
use polylock_id::{format_uuid, parse_ulid, parse_uuid, ulid_timestamp_ms, uuid7_timestamp_ms, SnowflakeLayout};

use crate::snowflake::named_layout;

const VECTORS: &str = include_str!("../test/vectors.tsv");

fn rows(kind: &str) -> Vec<Vec<&'static str>> {
    let rows: Vec<Vec<&str>> = VECTORS
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| line.split('\t').collect::<Vec<_>>())
        .filter(|fields| fields[0] == kind)
        .map(|fields| fields[1..].to_vec())
        .collect();
    assert!(!rows.is_empty(), "no {kind} vectors");
    rows
}

fn layout(spec: &str) -> SnowflakeLayout {
    named_layout(spec).unwrap_or_else(|| {
        let n: Vec<u64> = spec.split('/').map(|part| part.parse().unwrap()).collect();
        SnowflakeLayout::new(n[0], n[1] as u32, n[2] as u32, n[3] as u32).unwrap()
    })
}

#[test]
fn snowflakes_parse_to_the_expected_parts() {
    for row in rows("snowflake") {
        let parts = layout(row[1]).parse(row[0].parse().unwrap()).unwrap();
        let got = [parts.timestamp_ms, parts.worker, parts.sequence].map(|n| n.to_string());
        assert_eq!(got, [row[2], row[3], row[4]], "{row:?}");
    }
}

#[test]
fn uuid7_and_ulid_timestamps_and_conversions() {
    for row in rows("uuid7") {
        assert_eq!(uuid7_timestamp_ms(parse_uuid(row[0]).unwrap()).unwrap().to_string(), row[1], "{row:?}");
    }
    for row in rows("ulid") {
        let value = parse_ulid(row[0]).unwrap();
        assert_eq!(ulid_timestamp_ms(value).to_string(), row[1], "{row:?}");
        assert_eq!(format_uuid(value), row[2], "{row:?}");
    }
}

#[test]
fn lock_names_map_to_the_expected_sql_names() {
    for row in rows("names") {
        assert_eq!(postgres_advisory_key(row[0]).to_string(), row[1], "{row:?}");
        assert_eq!(mysql_lock_name(row[0]), row[2], "{row:?}");
        assert_eq!(lease_name(row[0]), row[3], "{row:?}");
    }
}
