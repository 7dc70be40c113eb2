//! One round of RedLock votes: the same request to every node at once, each bounded by the
//! per-node timeout, and what they answered.

use std::sync::Arc;
use std::time::Duration;

use super::node::Node;
use crate::error::{Error, Result};

pub(super) struct Votes {
    /// Each node with its answer: `Ok(true)` granted, `Ok(false)` refused, `Err` failed or
    /// timed out.
    pub answers: Vec<(Arc<Node>, Result<bool>)>,
}

impl Votes {
    pub async fn collect<F, Fut>(nodes: &[Arc<Node>], limit: Duration, ask: F) -> Votes
    where
        F: Fn(Arc<Node>, Duration) -> Fut,
        Fut: std::future::Future<Output = Result<bool>> + Send + 'static,
    {
        let mut asks = tokio::task::JoinSet::new();
        for (index, node) in nodes.iter().enumerate() {
            let request = ask(node.clone(), limit);
            let shown = node.shown.clone();
            asks.spawn(async move {
                let answer = match tokio::time::timeout(limit, request).await {
                    Ok(answer) => answer,
                    Err(_) => Err(Error::connection(format!("redis at {shown} did not answer in time"))),
                };
                (index, answer)
            });
        }
        let mut answers: Vec<Option<Result<bool>>> = nodes.iter().map(|_| None).collect();
        while let Some(joined) = asks.join_next().await {
            if let Ok((index, answer)) = joined {
                answers[index] = Some(answer);
            }
        }
        let answers = nodes
            .iter()
            .zip(answers)
            .map(|(node, answer)| (node.clone(), answer.unwrap_or_else(|| Err(Error::internal("a vote panicked")))))
            .collect();
        Votes { answers }
    }

    pub fn granted(&self) -> usize {
        self.answers.iter().filter(|(_, answer)| matches!(answer, Ok(true))).count()
    }

    pub fn errors(&self) -> usize {
        self.answers.iter().filter(|(_, answer)| answer.is_err()).count()
    }

    pub fn first_error(&self) -> Option<Error> {
        self.answers
            .iter()
            .find_map(|(_, answer)| answer.as_ref().err().map(|err| Error::new(err.kind(), err.message())))
    }
}
