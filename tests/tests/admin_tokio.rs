//! The admin suite (`kafka_tests::admin_suite`) through `kafka-tokio`.

use kafka_core::admin::{AdminError, Operation};
use kafka_core::config::ClientConfig;
use kafka_tests::admin_suite::Driver;
use kafka_tokio::Admin;
use tokio::runtime::Runtime;

/// The admin client and the runtime its driver runs on (the admin drops first).
struct Tokio {
    admin: Admin,
    runtime: Runtime,
}

impl Driver for Tokio {
    const NAME: &'static str = "tokio";

    fn connect(config: ClientConfig) -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime");
        let admin = Admin::with_runtime(config, runtime.handle()).expect("tokio admin");
        Tokio { admin, runtime }
    }

    fn run<O, T>(&self, op: O) -> Result<T, AdminError>
    where
        O: Operation<Output = Result<T, AdminError>>,
    {
        self.runtime.block_on(self.admin.run(op))
    }
}

kafka_tests::admin_suite!(Tokio);
