from django.contrib import messages


def reset_badge(request):
    messages.info(request, "Reset the badge key")  # safe: message
    return {"button": "Set a new key", "title": "Prepare report"}  # safe: labels
