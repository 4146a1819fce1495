// Filled in by its issue; the package is scaffolded so the workspace and lockfile are complete.
export {};
