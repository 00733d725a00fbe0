//! A scripted `Backend`: each `stream` call plays the next script and records the request.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use hearth_backend::{
    Backend, BackendError, BackendEvent, CompletionRequest, EventStream, FinishReason, ModelInfo,
};
use tokio_util::sync::CancellationToken;

/// One step of a scripted answer.
#[derive(Debug, Clone)]
pub enum Step {
    Event(BackendEvent),
    Fail(BackendError),
    Pause(Duration),
    /// Never produce anything more (until cancelled or dropped).
    Hang,
}

pub fn text(t: &str) -> Step {
    Step::Event(BackendEvent::Text {
        text: t.to_string(),
    })
}

pub fn reasoning(t: &str) -> Step {
    Step::Event(BackendEvent::Reasoning {
        text: t.to_string(),
    })
}

pub fn finish(reason: FinishReason) -> Step {
    Step::Event(BackendEvent::Finished { reason })
}

#[derive(Default)]
struct Inner {
    scripts: VecDeque<Vec<Step>>,
    requests: Vec<CompletionRequest>,
    models: Vec<ModelInfo>,
    /// Streams that ended because their consumer went away (cancelled or dropped).
    abandoned: usize,
}

#[derive(Clone, Default)]
pub struct FakeBackend {
    inner: Arc<Mutex<Inner>>,
}

impl FakeBackend {
    pub fn with_models(models: &[&str]) -> Self {
        let backend = Self::default();
        backend.inner.lock().unwrap().models = models.iter().map(|m| ModelInfo::new(*m)).collect();
        backend
    }

    pub fn push(&self, script: Vec<Step>) {
        self.inner.lock().unwrap().scripts.push_back(script);
    }

    pub fn requests(&self) -> Vec<CompletionRequest> {
        self.inner.lock().unwrap().requests.clone()
    }

    pub fn abandoned(&self) -> usize {
        self.inner.lock().unwrap().abandoned
    }

    pub async fn wait_abandoned(&self, n: usize) -> bool {
        for _ in 0..200 {
            if self.abandoned() >= n {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }
}

/// Counts the stream as abandoned if it is dropped before it finished.
struct AbandonGuard {
    inner: Arc<Mutex<Inner>>,
    finished: bool,
}

impl AbandonGuard {
    fn mark_finished(&mut self) {
        self.finished = true;
    }
}

impl Drop for AbandonGuard {
    fn drop(&mut self) {
        if !self.finished {
            self.inner.lock().unwrap().abandoned += 1;
        }
    }
}

#[async_trait]
impl Backend for FakeBackend {
    fn stream(&self, request: CompletionRequest, cancel: CancellationToken) -> EventStream {
        let script = {
            let mut inner = self.inner.lock().unwrap();
            inner.requests.push(request);
            inner.scripts.pop_front().unwrap_or_else(|| {
                vec![Step::Fail(BackendError::Internal(
                    "FakeBackend: no script left".into(),
                ))]
            })
        };
        let guard = AbandonGuard {
            inner: self.inner.clone(),
            finished: false,
        };
        let steps = VecDeque::from(script);
        futures::stream::unfold(
            (steps, guard, cancel),
            |(mut steps, mut guard, cancel)| async move {
                loop {
                    let step = match steps.pop_front() {
                        Some(step) => step,
                        None => {
                            guard.mark_finished();
                            return None;
                        }
                    };
                    match step {
                        Step::Event(event) => return Some((Ok(event), (steps, guard, cancel))),
                        Step::Fail(err) => {
                            steps.clear();
                            return Some((Err(err), (steps, guard, cancel)));
                        }
                        Step::Pause(d) => {
                            tokio::select! {
                                () = tokio::time::sleep(d) => {}
                                () = cancel.cancelled() => return None,
                            }
                        }
                        Step::Hang => {
                            cancel.cancelled().await;
                            return None;
                        }
                    }
                }
            },
        )
        .boxed()
    }

    async fn list_models(&self) -> Result<Vec<ModelInfo>, BackendError> {
        Ok(self.inner.lock().unwrap().models.clone())
    }
}

/// An agent core whose one endpoint, `fake`, is `backend`, with the given tool format.
pub fn agent_core(
    backend: &FakeBackend,
    data: &std::path::Path,
    tool_format: &str,
) -> hearth::agent::AgentCore {
    agent_core_with(backend, data, tool_format, "")
}

/// [`agent_core`] with `agent` as the config's `[agent]` table.
pub fn agent_core_with(
    backend: &FakeBackend,
    data: &std::path::Path,
    tool_format: &str,
    agent: &str,
) -> hearth::agent::AgentCore {
    use hearth::agent::{AgentCore, Catalog, Endpoint};
    use hearth::config::{ConfigSource, parse_str};
    let toml = format!(
        "[[endpoints]]\nname = \"fake\"\nbase_url = \"http://fake.invalid/v1\"\n\
         model = \"m\"\ntool_format = \"{tool_format}\"\n[agent]\n{agent}\n"
    );
    let config = parse_str(&toml, ConfigSource::Defaults, &|_| None).unwrap();
    let catalog = Catalog::new(vec![Endpoint {
        config: config.endpoints[0].clone(),
        backend: Arc::new(backend.clone()),
    }]);
    AgentCore::new(config, catalog, data.to_path_buf())
}
