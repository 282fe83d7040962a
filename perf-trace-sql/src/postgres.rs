//! tokio-postgres: a counted client, over a client or a pooled connection.
//!
//! [`CountedClient`] has tokio-postgres's statement methods (`query`,
//! `query_one`, `query_opt`, `execute`, `batch_execute`, `simple_query`),
//! each recording its statement ([`crate::start_statement`])
//! and handing it on unchanged. A statement is a `&str`, a `String` or a
//! [`CountedStatement`], which [`CountedClient::prepare`] returns: a
//! prepared statement that keeps its text, so that its runs are counted by
//! kind and repeats are found (tokio-postgres's `Statement` does not keep
//! its text). [`client`](CountedClient::client) reaches the wrapped client,
//! uncounted, for anything else.
//!
//! With the feature `bb8` or `deadpool`, [`CountedClient`] wraps a pooled
//! connection too, and [`Bb8Pool`] / [`DeadPool`] hand out counted clients.

use std::sync::Arc;

use perf_trace_core::scope;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Error, Row, SimpleQueryMessage, Statement, ToStatement};

use crate::start_in_request;

/// What derefs to a tokio-postgres [`Client`]: the client, a reference or
/// an `Arc` of one, a pooled connection (features `bb8`, `deadpool`).
pub trait AsClient {
    /// The client.
    fn as_client(&self) -> &Client;
}

impl AsClient for Client {
    fn as_client(&self) -> &Client {
        self
    }
}

impl<T: AsClient + ?Sized> AsClient for &T {
    fn as_client(&self) -> &Client {
        (**self).as_client()
    }
}

impl<T: AsClient + ?Sized> AsClient for Arc<T> {
    fn as_client(&self) -> &Client {
        (**self).as_client()
    }
}

/// A statement a [`CountedClient`] runs: its text, and what tokio-postgres
/// runs.
pub trait CountedSql {
    /// What tokio-postgres is handed.
    type Target: ?Sized + ToStatement + Sync;

    /// The statement's text.
    fn text(&self) -> &str;

    /// What tokio-postgres is handed.
    fn target(&self) -> &Self::Target;
}

/// Text statements: each its own text, handed to tokio-postgres as it is.
macro_rules! text_statements {
    ($($text:ty),*) => {$(
        impl CountedSql for $text {
            type Target = $text;

            fn text(&self) -> &str {
                self
            }

            fn target(&self) -> &$text {
                self
            }
        }
    )*};
}

text_statements!(str, String);

/// A prepared statement that keeps its text (see [`CountedClient::prepare`]).
#[derive(Debug, Clone)]
pub struct CountedStatement {
    statement: Statement,
    text: Arc<str>,
}

impl CountedStatement {
    /// The prepared statement.
    pub fn statement(&self) -> &Statement {
        &self.statement
    }
}

impl CountedSql for CountedStatement {
    type Target = Statement;

    fn text(&self) -> &str {
        &self.text
    }

    fn target(&self) -> &Statement {
        &self.statement
    }
}

/// A tokio-postgres client whose statements are counted and timed.
#[derive(Debug, Clone)]
pub struct CountedClient<C>(C);

/// Runs `run` as the statement `text`: counted and timed in a request,
/// handed straight on outside one.
macro_rules! counted {
    ($text:expr, $run:expr) => {{
        if !scope::is_active() {
            return $run.await;
        }
        let timer = start_in_request($text);
        let out = $run.await;
        timer.finish();
        out
    }};
}

/// The methods that run a prepared or text statement with parameters,
/// `name -> output`: each the client's own, counted.
macro_rules! counted_methods {
    ($($(#[$doc:meta])* $name:ident -> $out:ty;)*) => {$(
        $(#[$doc])*
        pub async fn $name<S: CountedSql + ?Sized>(
            &self,
            statement: &S,
            params: &[&(dyn ToSql + Sync)],
        ) -> Result<$out, Error> {
            counted!(statement.text(), self.client().$name(statement.target(), params))
        }
    )*};
}

impl<C: AsClient> CountedClient<C> {
    /// Counts the statements run through `client`.
    pub fn new(client: C) -> Self {
        CountedClient(client)
    }

    /// The wrapped client: statements run through it are not counted.
    pub fn client(&self) -> &Client {
        self.0.as_client()
    }

    /// Unwraps the client.
    pub fn into_inner(self) -> C {
        self.0
    }

    /// Prepares `sql`, keeping its text for counting. Preparing runs no
    /// statement, so it is not counted.
    pub async fn prepare(&self, sql: &str) -> Result<CountedStatement, Error> {
        let statement = self.client().prepare(sql).await?;
        Ok(CountedStatement {
            statement,
            text: sql.into(),
        })
    }

    counted_methods! {
        /// [`Client::query`], counted.
        query -> Vec<Row>;
        /// [`Client::query_one`], counted.
        query_one -> Row;
        /// [`Client::query_opt`], counted.
        query_opt -> Option<Row>;
        /// [`Client::execute`], counted.
        execute -> u64;
    }

    /// [`Client::batch_execute`], counted as one statement of the kind of
    /// its first.
    pub async fn batch_execute(&self, sql: &str) -> Result<(), Error> {
        counted!(sql, self.client().batch_execute(sql))
    }

    /// [`Client::simple_query`], counted as one statement of the kind of
    /// its first.
    pub async fn simple_query(&self, sql: &str) -> Result<Vec<SimpleQueryMessage>, Error> {
        counted!(sql, self.client().simple_query(sql))
    }
}

#[cfg(feature = "bb8")]
mod bb8_pool {
    use bb8::{PooledConnection, RunError};
    use bb8_postgres::PostgresConnectionManager;
    use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
    use tokio_postgres::{Client, Socket};

    use super::{AsClient, CountedClient};

    // bb8-postgres's own bounds on a manager, repeated where a pool is named.
    impl<Tls> AsClient for PooledConnection<'_, PostgresConnectionManager<Tls>>
    where
        Tls: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
        <Tls as MakeTlsConnect<Socket>>::Stream: Send + Sync,
        <Tls as MakeTlsConnect<Socket>>::TlsConnect: Send,
        <<Tls as MakeTlsConnect<Socket>>::TlsConnect as TlsConnect<Socket>>::Future: Send,
    {
        fn as_client(&self) -> &Client {
            self
        }
    }

    /// A bb8 pool of tokio-postgres connections that hands out
    /// [`CountedClient`]s (feature `bb8`).
    #[derive(Debug, Clone)]
    pub struct Bb8Pool<Tls>(bb8::Pool<PostgresConnectionManager<Tls>>)
    where
        Tls: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
        <Tls as MakeTlsConnect<Socket>>::Stream: Send + Sync,
        <Tls as MakeTlsConnect<Socket>>::TlsConnect: Send,
        <<Tls as MakeTlsConnect<Socket>>::TlsConnect as TlsConnect<Socket>>::Future: Send;

    impl<Tls> Bb8Pool<Tls>
    where
        Tls: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
        <Tls as MakeTlsConnect<Socket>>::Stream: Send + Sync,
        <Tls as MakeTlsConnect<Socket>>::TlsConnect: Send,
        <<Tls as MakeTlsConnect<Socket>>::TlsConnect as TlsConnect<Socket>>::Future: Send,
    {
        /// Counts the statements of `pool`'s connections.
        pub fn new(pool: bb8::Pool<PostgresConnectionManager<Tls>>) -> Self {
            Bb8Pool(pool)
        }

        /// The pool itself.
        pub fn inner(&self) -> &bb8::Pool<PostgresConnectionManager<Tls>> {
            &self.0
        }

        /// A connection of the pool, counted.
        pub async fn get(
            &self,
        ) -> Result<
            CountedClient<PooledConnection<'_, PostgresConnectionManager<Tls>>>,
            RunError<tokio_postgres::Error>,
        > {
            Ok(CountedClient::new(self.0.get().await?))
        }
    }
}

#[cfg(feature = "bb8")]
pub use bb8_pool::Bb8Pool;

#[cfg(feature = "deadpool")]
mod dead_pool {
    use deadpool_postgres::{Object, Pool, PoolError};
    use tokio_postgres::Client;

    use super::{AsClient, CountedClient};

    impl AsClient for Object {
        fn as_client(&self) -> &Client {
            self
        }
    }

    /// A deadpool pool of tokio-postgres connections that hands out
    /// [`CountedClient`]s (feature `deadpool`).
    #[derive(Debug, Clone)]
    pub struct DeadPool(Pool);

    impl DeadPool {
        /// Counts the statements of `pool`'s connections.
        pub fn new(pool: Pool) -> Self {
            DeadPool(pool)
        }

        /// The pool itself.
        pub fn inner(&self) -> &Pool {
            &self.0
        }

        /// A connection of the pool, counted.
        pub async fn get(&self) -> Result<CountedClient<Object>, PoolError> {
            Ok(CountedClient::new(self.0.get().await?))
        }
    }
}

#[cfg(feature = "deadpool")]
pub use dead_pool::DeadPool;
