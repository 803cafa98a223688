"""The GIL is released while the chains run: a Python thread counting in a loop makes progress
during flymc.sample(). (Were it held, the counter would stand still for the whole call.)"""
import threading
import time
import unittest

import flymc
import flymc_testing as ft


class Gil(unittest.TestCase):
    def test_a_python_thread_runs_while_sampling(self):
        x, y = ft.logistic_data(n=2000, d=5)
        count, stop = [0], threading.Event()

        def counter():
            while not stop.is_set():
                count[0] += 1

        thread = threading.Thread(target=counter)
        thread.start()
        try:
            time.sleep(0.05)
            # One chain on one thread (regular MCMC, a pass over all the data per iteration),
            # a core left for the counter; the run is lengthened until it lasts long enough to
            # tell, whatever the machine's speed (a fixed length was too short on a quiet one).
            iters = 2000
            while True:
                before, start = count[0], time.perf_counter()
                flymc.sample(x, y, algo="full", kernel="mala", chains=1, threads=1, warmup=500,
                             iters=iters, seed=1)
                during, seconds = count[0] - before, time.perf_counter() - start
                if seconds >= 0.3 or iters >= 2000 * 256:
                    break
                iters *= 4
        finally:
            stop.set()
            thread.join()
        self.assertGreater(seconds, 0.3, "the run was too short to tell")
        self.assertGreater(during, 1000, f"the counter moved {during} times in {seconds:.2f} s")


if __name__ == "__main__":
    unittest.main()
