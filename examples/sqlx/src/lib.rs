//! An inventory API on axum and sqlx (SQLite) with no store trait: the
//! handlers call a plain repository struct, and every statement is counted
//! by the pool it runs through (`perf_trace_sql::sqlx::CountedPool`, one
//! line in [`app`]); `#[counted_store]` on the repository's `impl` block
//! counts its methods too.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use perf_trace_core::layer::RoutePolicy;
use perf_trace_core::{
    counted_store, Emitter, KeySet, LineFormat, LineSink, PerfTraceLayer, Schema,
};
use perf_trace_sql::sqlx::CountedPool;
use serde::Serialize;
use sqlx::sqlite::SqlitePoolOptions;
use sqlx::{Sqlite, SqlitePool};

/// Where a request's time goes.
#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub enum Phase {
    /// Reading the database.
    Load,
}

/// What kind of request it was: by route, `other` for the rest.
#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(endpoints)]
pub enum Endpoint {
    /// Anything else.
    #[key(default)]
    Other,
    /// The product list with stock.
    #[key(route = "GET /products")]
    ProductsList,
    /// One product's stock.
    #[key(route = "GET /products/{id}/stock")]
    ProductStock,
}

/// A product and its stock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Product {
    /// Its id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// Units in stock.
    pub qty: i64,
}

/// The repository: a struct over the counted pool, no trait.
#[derive(Clone, Debug)]
pub struct Inventory {
    pool: CountedPool<Sqlite>,
}

#[counted_store]
impl Inventory {
    /// Every product with its stock, in one statement.
    pub async fn list_with_stock(&self) -> Result<Vec<Product>, sqlx::Error> {
        let rows: Vec<(i64, String, i64)> = sqlx::query_as(
            "SELECT p.id, p.name, COALESCE(s.qty, 0) AS qty \
             FROM products p LEFT JOIN stock s ON s.product_id = p.id ORDER BY p.id",
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(id, name, qty)| Product { id, name, qty })
            .collect())
    }

    /// Every product's id and name.
    pub async fn list_products(&self) -> Result<Vec<(i64, String)>, sqlx::Error> {
        sqlx::query_as("SELECT id, name FROM products ORDER BY id")
            .fetch_all(&self.pool)
            .await
    }

    /// One product's stock; `None` for an unknown product.
    pub async fn get_stock(&self, id: i64) -> Result<Option<i64>, sqlx::Error> {
        sqlx::query_scalar(
            "SELECT COALESCE(s.qty, 0) FROM products p \
             LEFT JOIN stock s ON s.product_id = p.id WHERE p.id = ?",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await
    }
}

impl Inventory {
    /// A repository over `pool`: the one line of wiring that counts every
    /// statement.
    pub fn new(pool: SqlitePool) -> Self {
        Inventory {
            pool: CountedPool::new(pool),
        }
    }

    /// An in-memory database with the schema and `rows` products, product
    /// `i` (from 1) having `i` units.
    pub async fn in_memory(rows: usize) -> Result<Self, sqlx::Error> {
        // One connection: an in-memory database lives in its connection.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect("sqlite::memory:")
            .await?;
        sqlx::raw_sql(
            "CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
             CREATE TABLE stock (product_id INTEGER PRIMARY KEY REFERENCES products(id), \
             qty INTEGER NOT NULL);",
        )
        .execute(&pool)
        .await?;
        for id in 1..=rows as i64 {
            sqlx::query("INSERT INTO products VALUES (?, ?)")
                .bind(id)
                .bind(format!("product-{id}"))
                .execute(&pool)
                .await?;
            sqlx::query("INSERT INTO stock VALUES (?, ?)")
                .bind(id)
                .bind(id)
                .execute(&pool)
                .await?;
        }
        Ok(Inventory::new(pool))
    }
}

/// The sets one request records; the `sql_*` sets of `perf-trace-sql`
/// need no listing: they reach the line of a request that ran SQL.
pub struct InventorySchema;

impl Schema for InventorySchema {
    type Phase = Phase;
    type StoreMethod = InventoryMethod;
    type Endpoint = Endpoint;
}

/// The routes, without tracing.
pub fn router(inventory: Inventory) -> Router {
    Router::new()
        .route("/products", get(list))
        .route("/products/{id}/stock", get(stock))
        .with_state(inventory)
}

/// The service with one line per request written to `lines`.
pub fn app(inventory: Inventory, lines: LineSink) -> Router {
    let emitter = Emitter::new(LineFormat::plain("inventory", "inventory.perf"), lines);
    router(inventory).layer(PerfTraceLayer::new(
        RoutePolicy::<InventorySchema>::new(),
        emitter,
    ))
}

/// A JSON error naming what was wrong.
fn error(status: StatusCode, message: String, parameter: Option<&str>) -> Response {
    #[derive(Serialize)]
    struct Body<'a> {
        error: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        parameter: Option<&'a str>,
    }
    let body = Body {
        error: message,
        parameter,
    };
    (status, Json(body)).into_response()
}

fn database_error(e: sqlx::Error) -> Response {
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("database: {e}"),
        None,
    )
}

async fn list(State(inventory): State<Inventory>) -> Response {
    let products =
        perf_trace_core::phase!(Phase::Load, async { inventory.list_with_stock().await }).await;
    match products {
        Ok(products) => Json(products).into_response(),
        Err(e) => database_error(e),
    }
}

async fn stock(State(inventory): State<Inventory>, Path(id): Path<String>) -> Response {
    let Some(id) = id.parse::<i64>().ok().filter(|&id| id > 0) else {
        return error(
            StatusCode::BAD_REQUEST,
            format!("`id` must be a positive integer, not {id:?}"),
            Some("id"),
        );
    };
    match inventory.get_stock(id).await {
        Ok(Some(qty)) => Json(qty).into_response(),
        Ok(None) => error(
            StatusCode::NOT_FOUND,
            format!("no product {id}"),
            Some("id"),
        ),
        Err(e) => database_error(e),
    }
}
