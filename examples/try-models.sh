WEFT_MODEL=threads ./hello            # a pool of kernel threads (the default)
WEFT_MODEL=spawn ./hello              # a kernel thread per task: the baseline
WEFT_MODEL=fibers ./hello             # every task a fiber, on one thread
WEFT_MODEL=mn WEFT_WORKERS=4 ./hello  # fibers over 4 work-stealing threads
