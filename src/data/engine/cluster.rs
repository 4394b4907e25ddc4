//! A Ballista cluster in this process: a scheduler and executors on localhost ports.

/// A Ballista scheduler and executors in this process, on localhost ports the system
/// picks: a cluster for one machine and for the tests (`ballista://localhost:PORT/…`
/// reaches it like any other). It lives as long as this value.
pub struct LocalCluster {
    pub port: u16,
    _rt: tokio::runtime::Runtime,
}

impl LocalCluster {
    /// Starts the scheduler and `executors` executors of `cores` cores each.
    pub fn start(executors: usize, cores: usize) -> Result<Self, String> {
        use ballista_core::serde::BallistaCodec;
        use ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let port = rt.block_on(async {
            let addr = ballista_scheduler::standalone::new_standalone_scheduler()
                .await
                .map_err(|e| format!("the scheduler did not start: {e}"))?;
            let url = format!("http://localhost:{}", addr.port());
            for _ in 0..executors {
                let mut tries = 0;
                let client = loop {
                    match SchedulerGrpcClient::connect(url.clone()).await {
                        Ok(c) => break c,
                        Err(e) if tries > 100 => {
                            return Err(format!("the scheduler did not answer: {e}"));
                        }
                        Err(_) => {
                            tries += 1;
                            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                        }
                    }
                };
                ballista_executor::new_standalone_executor(
                    client,
                    cores.max(1),
                    BallistaCodec::default(),
                )
                .await
                .map_err(|e| format!("an executor did not start: {e}"))?;
            }
            Ok::<u16, String>(addr.port())
        })?;
        Ok(Self { port, _rt: rt })
    }
}
