//! The operator's view of locks ([`crate::Inspector::status`] and [`crate::Inspector::list`])
//! as the one JSON shape every surface hands out: the CLI's `status --json` / `list --json`
//! print it, and each binding parses it into its own dict, object or struct, so no surface
//! names or orders the fields differently.
//!
//! Written field by field rather than through a `serde_json::Map`, whose key order a feature
//! elsewhere in a build can change; strings are escaped by `serde_json` (RFC 8259).

use std::time::Duration;

use crate::error::Result;
use crate::primitives::{lease_millis, LockEntry};
use crate::spi::{LockKind, LockStatus};
use crate::Client;

/// The status of the mutex `name` as `client` reads it, in [`status_json`]'s shape: of
/// `kind`, else of the backend's default kind, which the object names.
pub async fn status_of(client: &Client, name: &str, kind: Option<LockKind>) -> Result<String> {
    let inspector = client.inspect();
    let kind = inspector.kind_or_default(kind)?;
    let status = inspector.status(name, Some(kind)).await?;
    Ok(status_json(name, kind, client.capabilities().backend, &status))
}

/// The mutexes whose name starts with `prefix`, in [`list_json`]'s shape; `Unsupported`
/// where the backend cannot enumerate its locks.
pub async fn list_of(client: &Client, prefix: &str) -> Result<String> {
    Ok(list_json(&client.inspect().list(prefix).await?))
}

/// One JSON object: `name`, `kind`, `backend`, `held`, `holder`, `fencing_token`,
/// `token_counter`, `remaining_lease_ms` (null for no hold or no expiry), `lease_expires`
/// (false for a hold the store keeps while its session lives), `waiters` (null where the
/// backend cannot count them), `layout` and `details` (an object of the layout's further
/// facts, in display order).
pub fn status_json(name: &str, kind: LockKind, backend: &str, status: &LockStatus) -> String {
    let details: Vec<String> =
        status.details.iter().map(|(label, value)| format!("{}:{}", string(label), string(value))).collect();
    let fields = [
        ("name", string(name)),
        ("kind", string(kind.as_str())),
        ("backend", string(backend)),
        ("held", status.held.to_string()),
        ("holder", status.holder.as_deref().map_or_else(|| "null".into(), string)),
        ("fencing_token", number(status.fencing_token)),
        ("token_counter", number(status.token_counter)),
        ("remaining_lease_ms", number(lease_millis(status.remaining_lease))),
        ("lease_expires", status.remaining_lease.is_some_and(|left| left != Duration::MAX).to_string()),
        ("waiters", number(status.waiters)),
        ("layout", string(status.layout)),
        ("details", format!("{{{}}}", details.join(","))),
    ];
    let body: Vec<String> = fields.iter().map(|(key, value)| format!("{}:{value}", string(key))).collect();
    format!("{{{}}}", body.join(","))
}

/// One JSON array of `{"name", "kind", "held"}` objects, in the order given (the
/// inspector's: by name, then kind).
pub fn list_json(entries: &[LockEntry]) -> String {
    let items: Vec<String> = entries
        .iter()
        .map(|e| format!("{{\"name\":{},\"kind\":{},\"held\":{}}}", string(&e.name), string(e.kind.as_str()), e.held))
        .collect();
    format!("[{}]", items.join(","))
}

fn number(value: Option<u64>) -> String {
    value.map_or_else(|| "null".into(), |n| n.to_string())
}

fn string(text: &str) -> String {
    serde_json::to_string(text).expect("a string always serialises")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_is_one_object_in_field_order_with_escaped_strings() {
        let status = LockStatus {
            held: true,
            holder: Some("a\"b\n\u{1}".into()),
            fencing_token: Some(7),
            token_counter: None,
            remaining_lease: Some(Duration::from_millis(1500)),
            waiters: None,
            layout: "polylock hash",
            details: vec![("reentry", "2".into())],
        };
        let text = status_json("x", LockKind::Reentrant, "redis", &status);
        assert_eq!(
            text,
            r#"{"name":"x","kind":"reentrant","backend":"redis","held":true,"holder":"a\"b\n\u0001","fencing_token":7,"token_counter":null,"remaining_lease_ms":1500,"lease_expires":true,"waiters":null,"layout":"polylock hash","details":{"reentry":"2"}}"#
        );
        let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed["holder"], "a\"b\n\u{1}");
        let session = LockStatus { held: true, remaining_lease: Some(Duration::MAX), ..LockStatus::default() };
        let parsed: serde_json::Value =
            serde_json::from_str(&status_json("y", LockKind::Lease, "postgres", &session)).unwrap();
        assert_eq!(parsed["remaining_lease_ms"], serde_json::Value::Null);
        assert_eq!(parsed["lease_expires"], false);
    }

    #[test]
    fn a_list_is_an_array_of_name_kind_held() {
        let entries = vec![
            LockEntry { name: "a".into(), kind: LockKind::Fair, held: true },
            LockEntry { name: "b\"".into(), kind: LockKind::Reentrant, held: false },
        ];
        assert_eq!(
            list_json(&entries),
            r#"[{"name":"a","kind":"fair","held":true},{"name":"b\"","kind":"reentrant","held":false}]"#
        );
        assert_eq!(list_json(&[]), "[]");
    }
}
