//! WebKit's queue test as parking_lot runs it: producers and consumers over a bounded queue,
//! `empty` and `full` condvars on one mutex (one monitor's wait set here), notify one or
//! all, timed or untimed waits.

use lock_api::MutexGuard;
use objmon::{MonitorProtocol, RawMonitor};
use std::collections::VecDeque;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use super::{Condvar, Mutex};

// WebKit's queue test as parking_lot runs it (`webkit_queue_test`): producers and
// consumers over a bounded queue, with `empty` and `full` condvars on one mutex (so on
// one monitor's wait set here). Fewer messages than parking_lot's (ten protocols, two
// cores).

#[derive(Clone, Copy)]
enum Timeout {
    Bounded(Duration),
    Forever,
}

#[derive(Clone, Copy)]
enum NotifyStyle {
    One,
    All,
}

struct Queue {
    items: VecDeque<usize>,
    should_continue: bool,
}

fn wait<P: MonitorProtocol, T: ?Sized>(
    condition: &Condvar<P>,
    lock: &mut MutexGuard<'_, RawMonitor<P>, T>,
    predicate: impl Fn(&mut MutexGuard<'_, RawMonitor<P>, T>) -> bool,
    timeout: &Timeout,
) {
    while !predicate(lock) {
        match timeout {
            Timeout::Forever => condition.wait(lock),
            Timeout::Bounded(bound) => {
                condition.wait_for(lock, *bound);
            }
        }
    }
}

fn notify<P: MonitorProtocol>(style: NotifyStyle, condition: &Condvar<P>, should_notify: bool) {
    match style {
        NotifyStyle::One => {
            condition.notify_one();
        }
        NotifyStyle::All => {
            if should_notify {
                condition.notify_all();
            }
        }
    }
}

fn run_queue_test<P: MonitorProtocol>(
    num_producers: usize,
    num_consumers: usize,
    max_queue_size: usize,
    messages_per_producer: usize,
    notify_style: NotifyStyle,
    timeout: Timeout,
) {
    let input_queue = Arc::new(Mutex::<P, Queue>::new(Queue {
        items: VecDeque::new(),
        should_continue: true,
    }));
    let empty = Arc::new(Condvar::<P>::new());
    let full = Arc::new(Condvar::<P>::new());
    let output = Arc::new(Mutex::<P, Vec<usize>>::new(vec![]));

    let consumers = (0..num_consumers)
        .map(|_| {
            let (q, empty, full, output) = (
                input_queue.clone(),
                empty.clone(),
                full.clone(),
                output.clone(),
            );
            thread::spawn(move || loop {
                let (should_notify, result) = {
                    let mut queue = q.lock();
                    wait(
                        &empty,
                        &mut queue,
                        |s| !s.items.is_empty() || !s.should_continue,
                        &timeout,
                    );
                    if queue.items.is_empty() && !queue.should_continue {
                        return;
                    }
                    let should_notify = queue.items.len() == max_queue_size;
                    let result = queue.items.pop_front();
                    drop(queue);
                    (should_notify, result)
                };
                notify(notify_style, &full, should_notify);
                if let Some(result) = result {
                    output.lock().push(result);
                }
            })
        })
        .collect::<Vec<_>>();
    let producers = (0..num_producers)
        .map(|_| {
            let (q, empty, full) = (input_queue.clone(), empty.clone(), full.clone());
            thread::spawn(move || {
                for message in 0..messages_per_producer {
                    let should_notify = {
                        let mut queue = q.lock();
                        wait(
                            &full,
                            &mut queue,
                            |s| s.items.len() < max_queue_size,
                            &timeout,
                        );
                        let should_notify = queue.items.is_empty();
                        queue.items.push_back(message);
                        should_notify
                    };
                    notify(notify_style, &empty, should_notify);
                }
            })
        })
        .collect::<Vec<_>>();

    for producer in producers {
        producer.join().expect("producer panicked");
    }
    input_queue.lock().should_continue = false;
    empty.notify_all();
    for consumer in consumers {
        consumer.join().expect("consumer panicked");
    }

    let mut output = output.lock();
    assert_eq!(output.len(), num_producers * messages_per_producer);
    output.sort();
    for msg_idx in 0..messages_per_producer {
        for producer_idx in 0..num_producers {
            assert_eq!(msg_idx, output[msg_idx * num_producers + producer_idx]);
        }
    }
}

/// WebKit `sanity_check_queue` / `new_test_without_timeout_5`: notify_all, one slot.
pub fn queue_notify_all_bounded<P: MonitorProtocol>() {
    run_queue_test::<P>(
        1,
        1,
        1,
        2_000,
        NotifyStyle::All,
        Timeout::Bounded(Duration::from_secs(1)),
    );
    run_queue_test::<P>(1, 5, 1, 2_000, NotifyStyle::All, Timeout::Forever);
}

/// WebKit `one_producer_one_consumer_one_slot` / `_hundred_slots` with notify_one.
pub fn queue_notify_one_forever<P: MonitorProtocol>() {
    run_queue_test::<P>(1, 1, 1, 2_000, NotifyStyle::One, Timeout::Forever);
    run_queue_test::<P>(1, 1, 100, 10_000, NotifyStyle::One, Timeout::Forever);
}

/// WebKit `ten_producers_one_consumer_one_slot` and `ten_producers_ten_consumers_one_slot`
/// with notify_one: many waiters of both condvars in the one wait set.
pub fn queue_ten_producers_notify_one<P: MonitorProtocol>() {
    run_queue_test::<P>(10, 1, 1, 300, NotifyStyle::One, Timeout::Forever);
    run_queue_test::<P>(10, 10, 1, 300, NotifyStyle::One, Timeout::Forever);
}
