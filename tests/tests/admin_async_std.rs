//! The admin suite (`kafka_tests::admin_suite`) through `kafka-async-std` on async-std.

use kafka_async_std::Admin;
use kafka_core::admin::{AdminError, Operation};
use kafka_core::config::ClientConfig;
use kafka_tests::admin_suite::Driver;

struct AsyncStd(Admin);

impl Driver for AsyncStd {
    const NAME: &'static str = "async-std";

    fn connect(config: ClientConfig) -> Self {
        AsyncStd(Admin::new(config).expect("async-std admin"))
    }

    fn run<O, T>(&self, op: O) -> Result<T, AdminError>
    where
        O: Operation<Output = Result<T, AdminError>>,
    {
        async_std::task::block_on(self.0.run(op))
    }
}

kafka_tests::admin_suite!(AsyncStd);
