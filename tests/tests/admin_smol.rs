//! The admin suite (`kafka_tests::admin_suite`) through `kafka-async-std` on smol.

use kafka_async_std::Admin;
use kafka_core::admin::{AdminError, Operation};
use kafka_core::config::ClientConfig;
use kafka_tests::admin_suite::Driver;

struct Smol(Admin);

impl Driver for Smol {
    const NAME: &'static str = "smol";

    fn connect(config: ClientConfig) -> Self {
        Smol(Admin::with_spawner(config, |task| smol::spawn(task).detach()).expect("smol admin"))
    }

    fn run<O, T>(&self, op: O) -> Result<T, AdminError>
    where
        O: Operation<Output = Result<T, AdminError>>,
    {
        smol::block_on(self.0.run(op))
    }
}

kafka_tests::admin_suite!(Smol);
