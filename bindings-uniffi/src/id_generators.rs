//! Segment IDs and Snowflake on a leased worker id: the core's `SegmentGenerator` and
//! `LeasedSnowflake`, translated.

use std::sync::Arc;

use crate::errors::Result;
use crate::shared::ClientShared;

#[derive(uniffi::Object)]
pub struct Segment {
    shared: Arc<ClientShared>,
    generator: polylock::SegmentGenerator,
}

impl Segment {
    pub fn new(shared: Arc<ClientShared>, generator: polylock::SegmentGenerator) -> Arc<Segment> {
        Arc::new(Segment { shared, generator })
    }

    fn what(&self) -> String {
        format!("segment '{}'", self.generator.tag())
    }
}

#[uniffi::export]
impl Segment {
    pub fn tag(&self) -> String {
        self.generator.tag().to_string()
    }

    /// An ID never handed out before for this tag (never 0).
    pub async fn next_id(&self) -> Result<u64> {
        let generator = self.generator.clone();
        self.shared.run(self.what(), async move { generator.next_id().await }).await
    }

    /// `count` IDs, all or nothing.
    pub async fn next_ids(&self, count: u32) -> Result<Vec<u64>> {
        let generator = self.generator.clone();
        self.shared.run(self.what(), async move { generator.next_ids(count as usize).await }).await
    }
}

#[derive(uniffi::Object)]
pub struct LeasedSnowflake {
    shared: Arc<ClientShared>,
    generator: polylock::LeasedSnowflake,
}

impl LeasedSnowflake {
    pub fn new(shared: Arc<ClientShared>, generator: polylock::LeasedSnowflake) -> Arc<LeasedSnowflake> {
        Arc::new(LeasedSnowflake { shared, generator })
    }
}

#[uniffi::export]
impl LeasedSnowflake {
    /// `Lost` when the lease ended under the call; `Exhausted` when the clock cannot yet pass
    /// the previous holder's mark.
    pub async fn next_id(&self) -> Result<u64> {
        let generator = self.generator.clone();
        self.shared.run("a leased snowflake".to_string(), async move { generator.next_id().await }).await
    }

    pub async fn next_ids(&self, count: u32) -> Result<Vec<u64>> {
        let generator = self.generator.clone();
        self.shared.run("a leased snowflake".to_string(), async move { generator.next_ids(count as usize).await }).await
    }

    /// The worker id held now (nil between a loss and the next lease).
    pub async fn worker_id(&self) -> Result<Option<u64>> {
        let generator = self.generator.clone();
        self.shared.run("a leased snowflake".to_string(), async move { Ok(generator.worker_id().await) }).await
    }

    /// The epoch of the lease held now.
    pub async fn epoch(&self) -> Result<Option<u64>> {
        let generator = self.generator.clone();
        self.shared.run("a leased snowflake".to_string(), async move { Ok(generator.epoch().await) }).await
    }

    /// Give the worker id back now.
    pub async fn close(&self) -> Result<()> {
        let generator = self.generator.clone();
        self.shared.run("a leased snowflake".to_string(), async move { generator.close().await }).await
    }
}
