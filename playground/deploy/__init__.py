"""Running the site: production mode and its secret key (`production`), the database URL (`dburl`), the client's
address behind trusted proxies (`clientaddr`), static files on the event loop (`staticfiles`), our own CSS and JS
minified as they are served (`minify`), and real servers on loopback for the tests and the bench (`procs`). Only the
standard library and Django in what `settings.py` imports.

`python -m playground.deploy serve --host H --port P` is what `make run HOST=0.0.0.0` calls."""
