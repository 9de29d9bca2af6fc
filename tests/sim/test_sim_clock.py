from playground.sim.clock import TIMER, Scheduler, SplitMix64


def test_it_runs_entries_in_time_order_and_same_time_entries_in_scheduling_order():
    s = Scheduler()
    seen = []
    s.after(5, lambda: seen.append("b"))
    s.after(1, lambda: seen.append("a"))
    s.after(5, lambda: seen.append("c"))
    s.advance(10)
    assert seen == ["a", "b", "c"]
    assert s.now_ms == 10


def test_it_stops_run_until_at_the_deadline_and_moves_time_there():
    s = Scheduler()
    s.after(100, lambda: None)
    assert s.run_until(lambda: False, deadline_ms=50) is False
    assert s.now_ms == 50


def test_it_does_not_run_cancelled_entries():
    s = Scheduler()
    seen = []
    entry = s.after(1, lambda: seen.append(1))
    s.cancel(entry)
    s.advance(5)
    assert seen == [] and s.work_pending == 0


def test_it_settles_work_but_stops_before_a_timer_that_would_act():
    s = Scheduler()
    seen = []
    s.after(10, lambda: seen.append("timer"), category=TIMER, inert=lambda t: False)
    s.after(5, lambda: seen.append("work-1"))
    s.after(20, lambda: seen.append("work-2"))
    assert s.settle() is False
    assert seen == ["work-1"]


def test_it_settles_through_timers_that_would_do_nothing():
    s = Scheduler()
    seen = []
    s.after(10, lambda: seen.append("scan"), category=TIMER, inert=lambda t: True)
    s.after(20, lambda: seen.append("work"))
    assert s.settle() is True
    assert seen == ["scan", "work"]


def test_it_draws_the_same_numbers_from_the_same_seed():
    a, b = SplitMix64(42), SplitMix64(42)
    assert [a.next_u64() for _ in range(5)] == [b.next_u64() for _ in range(5)]
    assert SplitMix64(1).next_u64() != SplitMix64(2).next_u64()
    assert all(0 <= SplitMix64(i).randrange(7) < 7 for i in range(50))
