//! The admin suite (`kafka_tests::admin_suite`) through `kafka-blocking`.

use kafka_blocking::Admin;
use kafka_core::admin::{AdminError, Operation};
use kafka_core::config::ClientConfig;
use kafka_tests::admin_suite::Driver;

struct Blocking(Admin);

impl Driver for Blocking {
    const NAME: &'static str = "blocking";

    fn connect(config: ClientConfig) -> Self {
        Blocking(Admin::new(config).expect("blocking admin"))
    }

    fn run<O, T>(&self, op: O) -> Result<T, AdminError>
    where
        O: Operation<Output = Result<T, AdminError>>,
    {
        self.0.run(op)
    }
}

kafka_tests::admin_suite!(Blocking);
