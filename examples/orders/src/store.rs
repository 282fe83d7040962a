//! The orders store: a trait counted by `#[counted_store]`, and an in-memory
//! implementation.

use std::collections::BTreeMap;

use parking_lot::RwLock;
use perf_trace_core::counted_store;
use serde::{Deserialize, Serialize};

/// A product's id and price in cents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Product {
    /// The product id.
    pub id: u32,
    /// Unit price in cents.
    pub price_cents: u64,
}

/// One line of an order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderLine {
    /// The product ordered.
    pub product: u32,
    /// How many.
    pub quantity: u32,
}

/// An order as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Order {
    /// The order id.
    pub id: u64,
    /// Its lines.
    pub lines: Vec<OrderLine>,
}

/// What the API reads and writes. Every call of the counted decorator is
/// one `store_<Method>_n` on the line.
#[counted_store]
pub trait OrderStore: Send + Sync {
    /// Every order, by id.
    fn list_orders(&self) -> Vec<Order>;
    /// One order.
    fn get_order(&self, id: u64) -> Option<Order>;
    /// One product.
    fn get_product(&self, id: u32) -> Option<Product>;
    /// Stores a new order and returns it with its id.
    fn insert_order(&self, lines: Vec<OrderLine>) -> Order;
}

/// Orders and products in memory.
#[derive(Debug, Default)]
pub struct MemoryStore {
    orders: RwLock<BTreeMap<u64, Order>>,
    products: BTreeMap<u32, Product>,
}

impl MemoryStore {
    /// A store with `products` and no orders.
    pub fn new(products: impl IntoIterator<Item = Product>) -> Self {
        MemoryStore {
            orders: RwLock::default(),
            products: products.into_iter().map(|p| (p.id, p)).collect(),
        }
    }

    /// The store the example serves: three products and two orders.
    pub fn sample() -> Self {
        let store = MemoryStore::new([
            Product {
                id: 1,
                price_cents: 250,
            },
            Product {
                id: 2,
                price_cents: 1_999,
            },
            Product {
                id: 3,
                price_cents: 75,
            },
        ]);
        store.insert_order(vec![
            OrderLine {
                product: 1,
                quantity: 2,
            },
            OrderLine {
                product: 3,
                quantity: 10,
            },
            OrderLine {
                product: 1,
                quantity: 1,
            },
        ]);
        store.insert_order(vec![OrderLine {
            product: 2,
            quantity: 1,
        }]);
        store
    }
}

impl OrderStore for MemoryStore {
    fn list_orders(&self) -> Vec<Order> {
        self.orders.read().values().cloned().collect()
    }

    fn get_order(&self, id: u64) -> Option<Order> {
        self.orders.read().get(&id).cloned()
    }

    fn get_product(&self, id: u32) -> Option<Product> {
        self.products.get(&id).copied()
    }

    fn insert_order(&self, lines: Vec<OrderLine>) -> Order {
        let mut orders = self.orders.write();
        let id = orders.keys().next_back().map_or(1, |last| last + 1);
        let order = Order { id, lines };
        orders.insert(id, order.clone());
        order
    }
}
