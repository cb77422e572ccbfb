"""The review pages: where humans keep agent memory honest, a module per family of pages.

Each page is one view that renders the whole page or, for an htmx request aimed at one of
its parts, that part only (django-template-partials). Every action is a POST to a service;
without JavaScript it redirects back to the page it came from with a flash message, with
htmx it answers with the row it changed (or nothing, when the row leaves the queue) and the
messages, swapped out of band.

``parts`` and ``access`` are what the pages share: rendering helpers, and who may see and
do what.
"""
