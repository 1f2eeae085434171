"""The main window (:mod:`.main_window`) and its docks, menus and dialogs. Thread: GUI."""
