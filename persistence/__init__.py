"""Records: SQLModel tables, async engine, migrations, repositories."""
